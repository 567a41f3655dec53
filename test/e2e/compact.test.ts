import { readFileSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliEnv, runCli } from "../e2e-providers/cli.js";
import {
  ensureBuilt,
  expectExit,
  harness,
  journalFile,
  lockFile,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * `harness compact SESSION`: a stopped session's older turns are summarized now, journaled as
 * automatic compaction is; the next resume sends the summary. Refusals append nothing.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const MARKER = "[harness: context compaction]";

/** A script that reads notes.txt at steps 0 and 1, then answers; it logs every request it gets. */
async function loggingScript(): Promise<{ script: string; log: string }> {
  const dir = await tempDir("harness-script-");
  const log = join(dir, "requests.jsonl");
  const script = join(dir, "notes.mjs");
  await writeFile(
    script,
    `import { appendFileSync } from "node:fs";
export default function (messages, step) {
  appendFileSync(${JSON.stringify(log)}, JSON.stringify({ step, messages }) + "\\n");
  if (String(messages[messages.length - 1].content).startsWith(${JSON.stringify(MARKER)}))
    return { text: "SUMMARY: notes.txt was read twice; keep going" };
  if (step < 2) return { calls: [{ id: "read-" + step, name: "read_file", arguments: { path: "notes.txt" } }] };
  return { text: "done" };
}
`,
  );
  await writeFile(log, "");
  return { script, log };
}

type Logged = { step: number; messages: { role: string; content: string }[] };

async function requests(log: string): Promise<Logged[]> {
  return (await readFile(log, "utf8"))
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Logged);
}

/** A session stopped by its model-request budget after two replies that each read notes.txt. */
async function stoppedSession(session: string) {
  const workspace = await workspaceWith({ "notes.txt": "NOTE-CONTENT-42\n" });
  const { script, log } = await loggingScript();
  const common = ["--script", script, "--workspace", workspace];
  const run = await harness([
    "run",
    ...common,
    "--session",
    session,
    "--max-model-requests",
    "2",
    "read notes",
  ]);
  expectExit(run, 2);
  return { workspace, script, log, common };
}

describe("harness compact", () => {
  it("journals the summary request and context.compacted; the next resume sends the summary", async () => {
    const { workspace, log, common } = await stoppedSession("cmp");
    const before = (await requests(log)).length;
    const compacted = await harness([
      "compact",
      "cmp",
      ...common,
      "--instructions",
      "keep the API design decisions",
      "--json",
    ]);
    expectExit(compacted, 0);
    const out = JSON.parse(compacted.stdout) as Record<string, unknown>;
    expect(out).toMatchObject({ session: "cmp", compacted: { replaced_messages: expect.any(Number) } });

    const sent = (await requests(log)).slice(before);
    expect(sent).toHaveLength(1);
    const ask = sent[0]?.messages.at(-1)?.content ?? "";
    expect(ask.startsWith(MARKER)).toBe(true);
    expect(ask.endsWith("\nkeep the API design decisions")).toBe(true);

    const records = await readJournal(workspace, "cmp");
    const tail = records.slice(-2);
    expect(tail.map((r) => r.type)).toEqual(["model.started", "context.compacted"]);
    expect(tail[0]?.data).toMatchObject({
      purpose: "compaction",
      instructions: "keep the API design decisions",
    });
    expect(tail[1]?.data).toMatchObject({ summary: "SUMMARY: notes.txt was read twice; keep going" });
    expect(ofType(records, "session.resumed")).toHaveLength(0);
    const shown = await harness(["inspect", "cmp", "--workspace", workspace]);
    expectExit(shown, 0);
    expect(shown.stdout).toContain("(compaction): step 3, attempt 1");
    expect(shown.stdout).toContain('instructions: "keep the API design decisions"');

    const resumed = await harness(["resume", "cmp", ...common, "--max-model-requests", "10"]);
    expectExit(resumed, 0);
    const after = (await requests(log)).slice(before + 1);
    const first = after[0]?.messages ?? [];
    const contents = first.map((m) => m.content);
    expect(contents).toContain(
      "[Summary of the earlier conversation]\nSUMMARY: notes.txt was read twice; keep going",
    );
    expect(contents.some((c) => c.startsWith(MARKER))).toBe(false);
    // The first read (step 0) was replaced: only the latest turn's result is still sent.
    expect(contents.filter((c) => c.includes("NOTE-CONTENT-42"))).toHaveLength(1);
  });

  it("refuses, appending nothing, a session with nothing older to summarize, a locked one, a changed one, an unknown one", async () => {
    const { workspace, script, log } = await stoppedSession("few");
    const common = ["--script", script, "--workspace", workspace];
    // One more session, with a single reply: nothing older than the latest turn.
    const one = await harness([
      "run",
      ...common,
      "--session",
      "one",
      "--max-model-requests",
      "1",
      "read notes",
    ]);
    expectExit(one, 2);
    const sentBefore = (await requests(log)).length;

    const oneBytes = readFileSync(journalFile(workspace, "one"));
    const nothing = await harness(["compact", "one", ...common]);
    expectExit(nothing, 64);
    expect(nothing.stderr).toContain("nothing older");
    expect(readFileSync(journalFile(workspace, "one")).equals(oneBytes)).toBe(true);

    const fewBytes = readFileSync(journalFile(workspace, "few"));
    writeFileSync(
      lockFile(workspace, "few"),
      JSON.stringify({
        pid: 1,
        host: "another-host.invalid",
        started_at: new Date().toISOString(),
        proc_start: null,
      }),
    );
    const locked = await harness(["compact", "few", ...common]);
    expectExit(locked, 5);
    expect(readFileSync(journalFile(workspace, "few")).equals(fewBytes)).toBe(true);
    expect(locked.stderr).toContain("another-host.invalid");
    expectExit(await harness(["unlock", "few", "--workspace", workspace, "--force"]), 0);

    const changed = Buffer.from(fewBytes.toString("utf8").replace("read notes", "READ NOTES"));
    writeFileSync(journalFile(workspace, "few"), changed);
    const tampered = await harness(["compact", "few", ...common]);
    expectExit(tampered, 5);
    expect(tampered.stderr).toContain("journal refused");
    expect(readFileSync(journalFile(workspace, "few")).equals(changed)).toBe(true);

    const unknown = await harness(["compact", "nope", ...common]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain("nope");

    expect((await requests(log)).length).toBe(sentBefore);
  });

  it("refuses a session recorded under another user's journal key (untrusted), appending nothing", async () => {
    const user = async () =>
      cliEnv(await tempDir("harness-home-"), {
        HARNESS_KEY_FILE: join(await tempDir("harness-key-"), "journal.key"),
      });
    const [author, other] = [await user(), await user()];
    const workspace = await workspaceWith({ "notes.txt": "NOTE-CONTENT-42\n" });
    const { script, log } = await loggingScript();
    const common = ["--script", script, "--workspace", workspace];
    const run = await runCli(
      ["run", ...common, "--session", "theirs", "--max-model-requests", "2", "read notes"],
      author,
    );
    expectExit(run, 2);
    const sentBefore = (await requests(log)).length;
    const bytes = readFileSync(journalFile(workspace, "theirs"));
    const refused = await runCli(["compact", "theirs", ...common], other);
    expectExit(refused, 5);
    expect(refused.stderr).toContain("journal refused (UNTRUSTED)");
    expect(readFileSync(journalFile(workspace, "theirs")).equals(bytes)).toBe(true);
    expect((await requests(log)).length).toBe(sentBefore);
    // The author's own compaction of the same session is accepted; the resume it names repeats
    // what the journal does not keep (the scripted model, the budget given now).
    const own = await runCli(["compact", "theirs", ...common, "--max-model-requests", "9"], author);
    expectExit(own, 0);
    expect(own.stdout).toContain(
      `continue with: harness resume theirs --script ${script} --max-model-requests 9 --workspace ${workspace}\n`,
    );
  });
});
