import type { ChildProcess } from "node:child_process";
import {
  closeSync,
  existsSync,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SYSTEM_PROMPT } from "../../src/engine/system-prompt.js";
import {
  AGENTS_MD,
  COMPACTION_MARKER,
  DONE_TEXT,
  GOAL,
  type LoggedRequest,
  loggedRequests,
  longEnv,
  longRunArgs,
  longScript,
  longWorkspace,
  RESERVE,
  SESSION,
  STEPS,
  summaryAt,
  WINDOW,
} from "../support/long-session.js";
import { mulberry32 } from "../support/random.js";
import {
  type CliResult,
  ensureBuilt,
  expectExit,
  finished,
  type JournalLine,
  journalFile,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
} from "./helpers.js";

/**
 * A session of more than 300 steps through the built CLI with a 4000-token window: old results
 * are pruned and the history compacted many times, every request fits, the pinned system
 * message and goal reach the last request byte for byte, and the run ends verified. Then the
 * same session killed with SIGKILL at seeded random moments and resumed until it ends: every
 * request it sent, re-sent ones included, is byte for byte the request the uninterrupted run
 * sent at that step.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A request's identity within a session: its step, and whether it asked for a summary. */
const keyOf = (r: LoggedRequest) => `${r.step}${r.compaction ? " summary" : ""}`;
/** What the model was sent, exactly as it received it (the log line minus step and kind). */
const sentBytes = (r: LoggedRequest) => JSON.stringify(r.messages);

interface Reference {
  workspace: string;
  records: JournalLine[];
  requests: LoggedRequest[];
  summary: Record<string, unknown>;
}

let reference: Reference;

describe("a long session with a small window", () => {
  beforeAll(async () => {
    const workspace = await longWorkspace();
    const { script, log } = await longScript();
    const result = await finished(
      startHarness(longRunArgs(workspace, ["--script", script]), { env: await longEnv() }),
    );
    expectExit(result, 0);
    reference = {
      workspace,
      records: await readJournal(workspace, SESSION),
      requests: await loggedRequests(log),
      summary: jsonSummary(result),
    };
  }, 120_000);

  it("prunes, compacts many times, keeps every request within the window and the pinned set intact, and ends verified", () => {
    const { records, requests, summary, workspace } = reference;
    expect(summary).toMatchObject({ status: "verified", tool_calls: STEPS + 1 });
    expect(readFileSync(join(workspace, "done.txt"), "utf8")).toBe(`${DONE_TEXT}\n`);
    expect(ofType(records, "acceptance.checked")).toHaveLength(1);

    const pruned = ofType(records, "context.pruned");
    const compacted = ofType(records, "context.compacted");
    expect(pruned.length).toBeGreaterThan(20);
    expect(compacted.length).toBeGreaterThan(20);
    for (const record of compacted) {
      expect(record.data.summary).toBe(summaryAt(record.data.step as number));
      expect(record.data.tokens_after as number).toBeLessThan(record.data.tokens_before as number);
    }

    // Every request journaled was received, and none was over the window minus the reserve.
    const started = ofType(records, "model.started");
    expect(requests).toHaveLength(started.length);
    expect(started.filter((r) => r.data.purpose === "compaction")).toHaveLength(compacted.length);
    for (const record of started) {
      expect(record.data).toMatchObject({ context_window: WINDOW, reply_reserve: RESERVE });
      expect(record.data.estimated_input_tokens as number).toBeLessThanOrEqual(WINDOW - RESERVE);
    }
    expect(requests.filter((r) => !r.compaction).map((r) => r.step)).toEqual(
      Array.from({ length: STEPS + 2 }, (_, step) => step),
    );
    // Requests carried placeholders for pruned results, and summaries for compacted turns.
    expect(
      requests.some((r) => r.messages.some((m) => m.content.startsWith("[earlier read_file result removed"))),
    ).toBe(true);

    // The pinned set, byte for byte: the system message (rules, environment, AGENTS.md) and the
    // goal open every request, before and after every compaction, the last one included.
    const system = requests[0]?.messages[0];
    expect(system?.role).toBe("system");
    expect(system?.content.startsWith(SYSTEM_PROMPT)).toBe(true);
    expect(system?.content).toContain(AGENTS_MD.trim());
    for (const request of requests) {
      expect(request.messages[0]).toEqual(system);
      expect(request.messages[1]).toEqual({ role: "user", content: GOAL });
    }
    const last = requests.at(-1);
    expect(last?.compaction).toBe(false);
    expect(JSON.stringify(last?.messages[0])).toBe(JSON.stringify(system));
    expect(JSON.stringify(last?.messages[1])).toBe(JSON.stringify({ role: "user", content: GOAL }));
    const lastSummary = compacted.at(-1)?.data.summary as string;
    expect(last?.messages[2]).toEqual({
      role: "user",
      content: `[Summary of the earlier conversation]\n${lastSummary}`,
    });
    // Requests never repeat a compaction request's marker once it is answered.
    expect(last?.messages.some((m) => m.content.startsWith(COMPACTION_MARKER))).toBe(false);
  });

  it("SIGKILLed at seeded random moments and resumed until it ends, it sends every request exactly as the uninterrupted run did", async () => {
    const workspace = await longWorkspace();
    const { script, log, hold, holding } = await longScript();
    const env = await longEnv();
    const total = reference.records.length;
    const random = mulberry32(1207);
    // Kills after a random number of journal lines, and kills while a summary request or an
    // ordinary one is in flight (held by the script until the kill), in the order they come.
    const plan: KillPoint[] = [
      ...Array.from({ length: 8 }, () => ({
        kind: "lines" as const,
        atLeast: 6 + Math.floor(random() * (total - 10)),
      })),
      ...Array.from({ length: 3 }, () => ({
        kind: "summary" as const,
        atLeast: 6 + Math.floor(random() * (total - 100)),
      })),
      ...Array.from({ length: 3 }, () => ({
        kind: "step" as const,
        atLeast: 6 + Math.floor(random() * (total - 100)),
      })),
    ].sort((a, b) => a.atLeast - b.atLeast);

    const kills: { point: KillPoint; lastType: string }[] = [];
    let final: CliResult | undefined;
    for (let run = 0; final === undefined; run++) {
      expect(run).toBeLessThan(30);
      const child = startHarness(longRunArgs(workspace, ["--script", script]), { env });
      const done = finished(child);
      const point = plan[0];
      const killed =
        point === undefined ? false : await killAt(child, done, point, workspace, { hold, holding });
      if (killed && point !== undefined) {
        plan.shift();
        const records = await readJournal(workspace, SESSION);
        kills.push({ point, lastType: records.at(-1)?.type ?? "" });
        expect((await done).signal).toBe("SIGKILL");
        continue;
      }
      final = await done;
    }
    expectExit(final, 0);
    expect(jsonSummary(final)).toMatchObject({ status: "verified", tool_calls: STEPS + 1 });
    expect(plan).toEqual([]);
    expect(kills).toHaveLength(14);
    // The in-flight kills landed while the request was asked for and its answer not recorded.
    for (const kill of kills.filter((k) => k.point.kind !== "lines"))
      expect(kill.lastType).toBe("model.started");

    const expected = new Map(reference.requests.map((r) => [keyOf(r), sentBytes(r)]));
    expect(expected.size).toBe(reference.requests.length);
    const requests = await loggedRequests(log);
    for (const request of requests)
      expect(sentBytes(request), keyOf(request)).toBe(expected.get(keyOf(request)));
    expect(new Set(requests.map(keyOf))).toEqual(new Set(expected.keys()));
    // Requests sent again after a kill: at least the three summaries and the three ordinary
    // requests killed in flight, each equal to the uninterrupted run's (checked above).
    const sentAgain = (summary: boolean) => {
      const of = requests.filter((r) => r.compaction === summary);
      return of.length - new Set(of.map(keyOf)).size;
    };
    expect(sentAgain(true)).toBeGreaterThanOrEqual(3);
    expect(sentAgain(false)).toBeGreaterThanOrEqual(3);

    const records = await readJournal(workspace, SESSION);
    // A resume killed before it journaled anything leaves no session.resumed: at least one did.
    expect(ofType(records, "session.resumed").length).toBeGreaterThan(0);
    expect(ofType(records, "context.compacted").map((r) => r.data.summary)).toEqual(
      ofType(reference.records, "context.compacted").map((r) => r.data.summary),
    );
    expect(ofType(records, "tool.result").filter((r) => r.data.status !== "ok")).toEqual([]);
    expect(readFileSync(join(workspace, "done.txt"), "utf8")).toBe(`${DONE_TEXT}\n`);
  }, 90_000);
});

type KillPoint = { kind: "lines" | "summary" | "step"; atLeast: number };

/**
 * Watch the journal of a running CLI and SIGKILL it at `point`. "lines": once the journal holds
 * at least that many lines; the process is stopped first and killed only where the journal ends
 * on a whole record that is not a started tool call (a call killed in flight has an unknown
 * outcome by design, which a person must review: that is the crash test's subject, not this
 * one's), else it continues until the next record. "summary" ("step"): at the first summary
 * (ordinary) request after that many lines, which the script holds until the kill. Returns false when the process ended
 * first.
 */
async function killAt(
  child: ChildProcess,
  done: Promise<CliResult>,
  point: KillPoint,
  workspace: string,
  script: { hold: string; holding: string },
): Promise<boolean> {
  let exited = false;
  void done.then(() => {
    exited = true;
  });
  const journal = new Tail(journalFile(workspace, SESSION));
  /** Lines the journal held at a refused stop: the next try waits for a new record. */
  let refusedAt = -1;
  try {
    while (!exited) {
      await sleep(2);
      journal.poll();
      if (journal.lines < point.atLeast) continue;
      if (point.kind !== "lines") {
        if (!existsSync(script.hold)) writeFileSync(script.hold, point.kind);
        if (!existsSync(script.holding)) continue;
        child.kill("SIGKILL");
        return true;
      }
      if (journal.lines === refusedAt) continue;
      child.kill("SIGSTOP");
      await stopped(child.pid ?? 0);
      journal.poll();
      const last = journal.last;
      if (journal.whole && last !== undefined && !last.includes(`"type":"tool.started"`)) {
        child.kill("SIGKILL");
        return true;
      }
      refusedAt = journal.lines;
      child.kill("SIGCONT");
    }
    return false;
  } finally {
    journal.close();
    rmSync(script.hold, { force: true });
    rmSync(script.holding, { force: true });
  }
}

/** Wait until the kernel reports the process stopped (or gone). */
async function stopped(pid: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      return;
    }
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    if (state === "T" || state === "t" || state === "Z") return;
    await sleep(1);
  }
  throw new Error(`process ${pid} did not stop`);
}

/** Reads a growing file from where it last stopped: its line count and last whole line. */
class Tail {
  lines = 0;
  last: string | undefined;
  /** Whether the file ends with a newline (no record half written). */
  whole = true;
  private fd: number | undefined;
  private offset = 0;
  private partial = "";

  constructor(private readonly path: string) {}

  /** Read what was appended; returns the new whole lines. */
  poll(): string[] {
    if (this.fd === undefined) {
      if (!existsSync(this.path)) return [];
      this.fd = openSync(this.path, "r");
    }
    const size = fstatSync(this.fd).size;
    if (size <= this.offset) return [];
    const buffer = Buffer.alloc(size - this.offset);
    const read = readSync(this.fd, buffer, 0, buffer.length, this.offset);
    this.offset += read;
    const text = this.partial + buffer.subarray(0, read).toString("utf8");
    const parts = text.split("\n");
    this.partial = parts.pop() ?? "";
    this.whole = this.partial === "";
    this.lines += parts.length;
    if (parts.length > 0) this.last = parts.at(-1);
    return parts;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
  }
}
