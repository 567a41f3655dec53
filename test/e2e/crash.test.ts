import { existsSync } from "node:fs";
import { appendFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyJournal } from "../../src/journal/verify.js";
import { mulberry32 } from "../support/random.js";
import {
  type CliResult,
  ensureBuilt,
  expectExit,
  finished,
  fixture,
  harness,
  type JournalLine,
  journalFile,
  jsonSummary,
  lockFile,
  ofType,
  onStdoutLine,
  perCall,
  readJournal,
  removeTempDirs,
  sessionDir,
  startHarness,
  workspaceWith,
} from "./helpers.js";

/**
 * SIGKILL the CLI at every journal event of a six-step session (and at a few random moments),
 * then recover the way a user would: verify, unlock the stale lock, repair a torn tail, resume.
 * Whatever the kill point, nothing may run twice, the journal must verify, and the session must
 * end verified with exact file bytes, or review_required exactly when a call's outcome is unknown.
 */

const SESSION = "crash";
const GOAL = "upper-case a.txt and b.txt and create c.txt";
const SCRIPT = fixture("six-steps.mjs");
const INITIAL: Record<string, string> = { "a.txt": "alpha\n", "b.txt": "beta\n" };
const EXPECTED: Record<string, string> = { "a.txt": "ALPHA\n", "b.txt": "BETA\n", "c.txt": "gamma\n" };
const ACCEPT = Object.entries(EXPECTED)
  .map(([name, content]) => `printf '${content.replace("\n", "\\n")}' | cmp -s - ${name}`)
  .join(" && ");
const CALL_IDS = ["read-a", "edit-a", "read-b", "write-c", "edit-b"];
/** session.started, user.input, instructions.loaded, workspace.base; per tool step model.started, model.reply,
 * tool.started, tool.result, and workspace.changed for each of the three writes; then model.started, model.reply,
 * acceptance.checked, run.finished. */
const TOTAL_EVENTS = 4 + 4 * CALL_IDS.length + 3 + 4;
const OUTCOMES = ["run.finished", "run.stopped", "run.cancelled"];

const runArgs = (workspace: string, extra: string[] = []) => [
  "run",
  ...["--script", SCRIPT, "--workspace", workspace, "--write", "allow", "--accept", ACCEPT],
  ...["--session", SESSION, ...extra, GOAL],
];
const resumeArgs = (workspace: string, extra: string[] = []) => [
  "resume",
  SESSION,
  ...["--script", SCRIPT, "--workspace", workspace, ...extra],
];

type KillPlan = { afterEvent: number } | { afterSpawnMs: number } | { afterFirstEventMs: number };

interface Killed {
  result: CliResult;
  /** The `--events` lines the process printed before it died, parsed. */
  printed: JournalLine[];
}

/** Start the session with `--events` and SIGKILL it according to the plan. */
async function runAndKill(workspace: string, plan: KillPlan, extra: string[] = []): Promise<Killed> {
  const child = startHarness([...runArgs(workspace, extra), "--events"]);
  const lines: string[] = [];
  const kill = () => child.kill("SIGKILL");
  onStdoutLine(child, (line, index) => {
    lines.push(line);
    if ("afterEvent" in plan && index === plan.afterEvent) kill();
    if ("afterFirstEventMs" in plan && index === 1) setTimeout(kill, plan.afterFirstEventMs);
  });
  if ("afterSpawnMs" in plan) setTimeout(kill, plan.afterSpawnMs);
  const result = await finished(child);
  return { result, printed: lines.map((line) => JSON.parse(line) as JournalLine) };
}

interface Recovery {
  torn: boolean;
  staleLock: boolean;
  /** Calls that had started without a recorded result when the process died. */
  orphans: string[];
  status: "verified" | "review_required";
}

/** Every step a user takes after a crash, with the checks each step must pass. */
async function recover(workspace: string, printed: JournalLine[]): Promise<Recovery> {
  const journal = journalFile(workspace, SESSION);
  const bytesNow = () => readFile(journal);

  const verified = await harness(["journal", "verify", SESSION, "--workspace", workspace, "--json"]);
  const verdict = JSON.parse(verified.stdout) as { ok: boolean; code?: string };
  const torn = !verdict.ok;
  if (torn) {
    expectExit(verified, 5);
    expect(verdict.code).toBe("TORN_TAIL");
  } else {
    expectExit(verified, 0);
  }

  // What the process printed was durable before it was printed.
  const durable = await readJournal(workspace, SESSION);
  expect(durable.slice(0, printed.length)).toEqual(printed);

  if (torn) {
    const before = await bytesNow();
    const refused = await harness(resumeArgs(workspace));
    expectExit(refused, 5);
    expect(refused.stderr).toContain("journal refused (TORN_TAIL)");
    expect(refused.stderr).toContain(`harness journal repair ${SESSION}`);
    expect(await bytesNow()).toEqual(before);
  }

  const staleLock = existsSync(lockFile(workspace, SESSION));
  // A stale lock in front of a torn journal: repair does not take locks over, so it is cleared
  // by hand first. In front of an intact journal, resume takes it over by itself (below).
  if (staleLock && torn) {
    const before = await bytesNow();
    const refused = await harness(["journal", "repair", SESSION, "--workspace", workspace]);
    expectExit(refused, 5);
    expect(refused.stderr).toContain("stale");
    expect(refused.stderr).toContain(`harness unlock ${SESSION}`);
    expect(await bytesNow()).toEqual(before);
    const unlocked = await harness(["unlock", SESSION, "--workspace", workspace]);
    expectExit(unlocked, 0);
    expect(unlocked.stdout).toContain("removed the lock");
    expect(existsSync(lockFile(workspace, SESSION))).toBe(false);
  }
  const takesOverLock = staleLock && !torn;

  if (torn) {
    const damaged = await bytesNow();
    const repaired = await harness(["journal", "repair", SESSION, "--workspace", workspace, "--json"]);
    expectExit(repaired, 0);
    const report = JSON.parse(repaired.stdout) as {
      backup: string;
      keptRecords: number;
      droppedLines: number;
    };
    expect(report.droppedLines).toBe(1);
    expect(await readFile(report.backup)).toEqual(damaged);
    expect(await bytesNow()).toEqual(damaged.subarray(0, damaged.lastIndexOf(0x0a) + 1));
    expectExit(await harness(["journal", "verify", SESSION, "--workspace", workspace]), 0);
  }

  const before = await readJournal(workspace, SESSION);
  const results = perCall(before, "tool.result");
  const orphans = ofType(before, "tool.started")
    .map((r) => String(r.data.call_id))
    .filter((id) => !results.has(id));

  const resumed = await harness([...resumeArgs(workspace), "--json"]);
  const summary = jsonSummary(resumed);
  const recoveredLocks = ofType(
    (await readJournal(workspace, SESSION)).slice(before.length),
    "lock.recovered",
  );
  if (takesOverLock) {
    expect(resumed.stderr).toContain("took over the stale writer lock of pid");
    expect(recoveredLocks).toHaveLength(1);
    expect(recoveredLocks[0]!.data).toMatchObject({
      host: hostname(),
      reason: expect.stringContaining("no process"),
    });
  } else {
    expect(recoveredLocks).toHaveLength(0);
  }
  if (orphans.length > 0) {
    expectExit(resumed, 3);
    expect(summary).toMatchObject({ status: "review_required", reason: "unknown_outcome" });
  } else {
    expectExit(resumed, 0);
    expect(summary.status).toBe("verified");
  }

  await checkAfterResume(workspace, before, orphans);
  return { torn, staleLock, orphans, status: summary.status as Recovery["status"] };
}

/**
 * A session killed between creating its journal and its first append has no recorded goal:
 * resume says how to start it again, and `run --session` does.
 */
async function restartEmpty(workspace: string): Promise<void> {
  expect(await readFiles(workspace)).toEqual(INITIAL);
  if (existsSync(lockFile(workspace, SESSION))) {
    expectExit(await harness(["unlock", SESSION, "--workspace", workspace]), 0);
  }
  const refused = await harness(resumeArgs(workspace));
  expectExit(refused, 64);
  expect(refused.stderr).toContain(`harness run --session ${SESSION}`);
  expect(await readFile(journalFile(workspace, SESSION))).toEqual(Buffer.alloc(0));
  const restarted = await harness([...runArgs(workspace), "--json"]);
  expectExit(restarted, 0);
  expect(jsonSummary(restarted).status).toBe("verified");
  await checkAfterResume(workspace, [], []);
}

/** A process killed before it recorded an outcome always leaves its writer lock behind. */
async function expectLockLeftIfUnfinished(workspace: string): Promise<void> {
  const last = (await readJournal(workspace, SESSION)).at(-1)!;
  if (!OUTCOMES.includes(last.type)) expect(existsSync(lockFile(workspace, SESSION))).toBe(true);
}

async function checkAfterResume(workspace: string, before: JournalLine[], orphans: string[]): Promise<void> {
  const check = await verifyJournal(journalFile(workspace, SESSION));
  expect(check.ok).toBe(true);
  expect(existsSync(lockFile(workspace, SESSION))).toBe(false);
  const after = await readJournal(workspace, SESSION);
  expect(after.slice(0, before.length)).toEqual(before);

  const started = perCall(after, "tool.started");
  const results = perCall(after, "tool.result");
  for (const [id, count] of started) {
    expect(count, `tool.started for ${id}`).toBe(1);
    expect(results.get(id), `tool.result for ${id}`).toBe(1);
  }
  for (const [id, count] of results) expect(count, `tool.result for ${id}`).toBe(1);

  const unknown = ofType(after, "tool.result").filter((r) => r.data.status === "unknown");
  expect(unknown.map((r) => r.data.call_id).sort()).toEqual([...orphans].sort());

  const files = await readFiles(workspace);
  if (orphans.length === 0) {
    expect(files).toEqual(EXPECTED);
    expect([...started.keys()].sort()).toEqual([...CALL_IDS].sort());
    expect(ofType(after, "run.finished").at(-1)!.data.status).toBe("verified");
  } else {
    // Each write is atomic and none ran twice: every file holds its old or its new bytes.
    for (const name of Object.keys(EXPECTED)) {
      expect([INITIAL[name], EXPECTED[name]], name).toContain(files[name]);
    }
  }
}

async function readFiles(workspace: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of Object.keys(EXPECTED)) {
    const path = join(workspace, name);
    if (existsSync(path)) files[name] = await readFile(path, "utf8");
  }
  return files;
}

const SEED = Number(process.env.HARNESS_CRASH_SEED ?? Date.now() % 1_000_000);
const random = mulberry32(SEED);
const RANDOM_PLANS: KillPlan[] = [
  { afterSpawnMs: Math.floor(random() * 400) },
  { afterSpawnMs: Math.floor(random() * 800) },
  { afterFirstEventMs: Math.floor(random() * 100) },
  { afterFirstEventMs: Math.floor(random() * 300) },
];

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("SIGKILL at any point, then recover", () => {
  it("the uninterrupted session has the expected shape", async () => {
    const workspace = await workspaceWith(INITIAL);
    const { result, printed } = await runAndKill(workspace, { afterEvent: Number.POSITIVE_INFINITY });
    expectExit(result, 0);
    expect(printed).toHaveLength(TOTAL_EVENTS);
    expect(await readFiles(workspace)).toEqual(EXPECTED);
  });

  it.concurrent.each(Array.from({ length: TOTAL_EVENTS }, (_, i) => i + 1))(
    "killed after event %i",
    async (k) => {
      const workspace = await workspaceWith(INITIAL);
      const { result, printed } = await runAndKill(workspace, { afterEvent: k });
      expect(printed.length).toBeGreaterThanOrEqual(k);
      // Near the end the process may finish before the signal arrives.
      expect(result.signal === "SIGKILL" || result.code === 0).toBe(true);
      await expectLockLeftIfUnfinished(workspace);
      await recover(workspace, printed);
    },
  );

  it.concurrent.each(RANDOM_PLANS.map((plan) => [JSON.stringify(plan), plan] as const))(
    `killed at a random moment ${"%s"} (seed ${SEED})`,
    async (_, plan) => {
      const workspace = await workspaceWith(INITIAL);
      const { printed } = await runAndKill(workspace, plan);
      const journal = journalFile(workspace, SESSION);
      if (!existsSync(journal)) {
        // Killed before the session's journal existed: nothing can have been touched.
        expect(printed).toEqual([]);
        expect(await readFiles(workspace)).toEqual(INITIAL);
        return;
      }
      if ((await readFile(journal)).length === 0) {
        await restartEmpty(workspace);
        return;
      }
      await expectLockLeftIfUnfinished(workspace);
      await recover(workspace, printed);
    },
  );

  it("a session interrupted before its first record is started again with run --session", async () => {
    const workspace = await workspaceWith(INITIAL);
    await mkdir(sessionDir(workspace, SESSION), { recursive: true });
    await writeFile(journalFile(workspace, SESSION), "");
    await restartEmpty(workspace);
  });

  it("a torn tail is refused by resume, cut off by repair (with a backup), then the session resumes", async () => {
    const workspace = await workspaceWith(INITIAL);
    const stopped = await harness([...runArgs(workspace, ["--max-tool-calls", "3"]), "--json"]);
    expectExit(stopped, 2);
    expect(jsonSummary(stopped)).toMatchObject({ status: "stopped", reason: "budget_exhausted" });
    const journal = journalFile(workspace, SESSION);
    const whole = await readFile(journal);
    const lastLine = whole.subarray(whole.lastIndexOf(0x0a, whole.length - 2) + 1);
    await appendFile(journal, lastLine.subarray(0, Math.floor(lastLine.length / 2)));

    const recovery = await recover(workspace, []);
    expect(recovery).toMatchObject({ torn: true, staleLock: false, orphans: [], status: "verified" });
    expect(await readFiles(workspace)).toEqual(EXPECTED);
  });

  it("an edit applied but never journaled is marked unknown and never applied again", async () => {
    const workspace = await workspaceWith(INITIAL);
    expectExit(await harness(runArgs(workspace, ["--max-tool-calls", "2"])), 2);
    expect(await readFiles(workspace)).toEqual({ ...INITIAL, "a.txt": EXPECTED["a.txt"] });
    // Cut the journal right after edit-a's tool.started: the state a crash between the write and
    // the journaling of its result leaves behind.
    const journal = journalFile(workspace, SESSION);
    const lines = (await readFile(journal, "utf8")).split(/(?<=\n)/);
    const cut = lines.findIndex((line) => {
      const record = JSON.parse(line) as JournalLine;
      return record.type === "tool.started" && record.data.call_id === "edit-a";
    });
    await writeFile(journal, lines.slice(0, cut + 1).join(""));

    const recovery = await recover(workspace, []);
    expect(recovery).toMatchObject({
      torn: false,
      staleLock: false,
      orphans: ["edit-a"],
      status: "review_required",
    });
    expect(await readFiles(workspace)).toEqual({ ...INITIAL, "a.txt": EXPECTED["a.txt"] });

    const before = await readJournal(workspace, SESSION);
    const again = await harness([...resumeArgs(workspace), "--json"]);
    expectExit(again, 3);
    const added = (await readJournal(workspace, SESSION)).slice(before.length);
    expect(ofType(added, "tool.started")).toHaveLength(0);
    expect(ofType(added, "model.started")).toHaveLength(0);
    expect(await readFiles(workspace)).toEqual({ ...INITIAL, "a.txt": EXPECTED["a.txt"] });
  });

  it("a torn tail behind a stale lock: unlock, repair, resume", async () => {
    const workspace = await workspaceWith(INITIAL);
    // Killed right after the second reply is recorded (event 8: model.reply for edit-a).
    const { printed } = await runAndKill(workspace, { afterEvent: 8 });
    expect(existsSync(lockFile(workspace, SESSION))).toBe(true);
    const journal = journalFile(workspace, SESSION);
    await appendFile(journal, '{"data":{"call_id":"edit-a","name":"edit_f');

    const recovery = await recover(workspace, printed);
    expect(recovery.torn).toBe(true);
    expect(recovery.staleLock).toBe(true);
  });
});
