import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BIN,
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  sessionIds,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * The goal loop (`--until-accepted N`): the host's acceptance checks decide, and their failures go
 * back to the model as its next input until they pass. The scripted model below fixes one of three
 * failing tests each time it is told which attempt failed, so it only makes progress when the
 * checks' feedback reaches it.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** Three "tests": t1..t3.txt must each hold `good`; prints TAP's `# fail N` summary. */
const CHECK =
  'n=0; for f in t1 t2 t3; do grep -qx good $f.txt 2>/dev/null || { echo "not ok $f"; n=$((n+1)); }; done; echo "# fail $n"; test $n -eq 0';

/**
 * Fixes the next test each time the last message is a person's or the host's input (the goal, a
 * prompt, or the checks' feedback), and logs every such input it was sent to LOG.
 */
const fixer = (log: string) => `import { appendFileSync } from "node:fs";
export default function model(messages) {
  const last = messages[messages.length - 1];
  if (last.role === "tool") return { text: "fixed one" };
  appendFileSync(${JSON.stringify(log)}, JSON.stringify(last) + "\\n");
  const next = messages.filter((m) => m.role === "assistant").reduce((n, m) => n + m.calls.length, 0) + 1;
  return { text: "", calls: [{ id: "w" + next, name: "write_file", arguments: { path: "t" + next + ".txt", content: "good\\n" } }] };
}
`;

/** Never changes anything: always says it is done. */
const STUCK = () => `export default function model() { return { text: "all good, I think" }; }\n`;

async function script(
  source: (log: string) => string,
): Promise<{ path: string; sent: () => Promise<unknown[]> }> {
  const dir = await tempDir("harness-goal-script-");
  const path = join(dir, "model.mjs");
  const log = join(dir, "sent.ndjson");
  await writeFile(path, source(log));
  const sent = async () =>
    existsSync(log)
      ? (await readFile(log, "utf8"))
          .split("\n")
          .filter((line) => line !== "")
          .map((line) => JSON.parse(line) as unknown)
      : [];
  return { path, sent };
}

async function run(workspace: string, model: string, flags: string[], goal = "make the tests pass") {
  const child = startHarness([
    "run",
    "--script",
    model,
    "--workspace",
    workspace,
    "--write",
    "allow",
    "--accept",
    CHECK,
    "--json",
    ...flags,
    goal,
  ]);
  return finished(child);
}

describe("the goal loop", () => {
  it("gives the checks' failures back to the model until they pass (verified on attempt 3)", async () => {
    const workspace = await workspaceWith({ "README.md": "three tests\n" });
    const model = await script(fixer);
    const result = await run(workspace, model.path, ["--until-accepted", "5"]);
    expectExit(result, 0);
    const summary = jsonSummary(result);
    expect(summary.status).toBe("verified");
    expect(summary.attempts).toBe(3);
    for (const n of [1, 2, 3]) expect(await readFile(join(workspace, `t${n}.txt`), "utf8")).toBe("good\n");
    const journal = await readJournal(workspace, String(summary.session));
    const attempts = ofType(journal, "acceptance.attempt").map((r) => r.data);
    expect(attempts.map((a) => [a.n, a.passed, a.failed, a.continued])).toEqual([
      [1, 0, 1, true],
      [2, 0, 1, true],
      [3, 1, 0, false],
    ]);
    // Progress is the host's count of failing tests, read from the check's own summary.
    expect(attempts.map((a) => (a.progress as { tests_failed?: number }).tests_failed)).toEqual([2, 1, 0]);
    // The model was sent exactly what failed: the check, its exit code and its output's end.
    const feedback = String(attempts[0]?.feedback);
    expect(feedback).toContain("[harness: acceptance attempt 1 of 5]");
    expect(feedback).toContain("(exit 1)");
    expect(feedback).toContain("not ok t2");
    expect(feedback).toContain("# fail 2");
    // The whole output is kept as an artifact the model may read in full.
    const id = /whole output: read_artifact \{"id": "([0-9a-f]{64})"\}/.exec(feedback)?.[1];
    const artifact = join(
      workspace,
      ".harness",
      "sessions",
      String(summary.session),
      "artifacts",
      String(id),
    );
    expect(await readFile(artifact, "utf8")).toContain("not ok t2\nnot ok t3\n# fail 2\n");
    // ...and that is what the model received as its next input, once per failed attempt.
    expect(await model.sent()).toEqual([
      { role: "user", content: "make the tests pass" },
      { role: "user", content: attempts[0]?.feedback },
      { role: "user", content: attempts[1]?.feedback },
    ]);
    // One turn: the attempts share its budgets.
    expect(ofType(journal, "user.input")).toHaveLength(1);
    expect(ofType(journal, "run.finished").map((r) => r.data.status)).toEqual(["verified"]);
  }, 60_000);

  it("stops after K attempts in a row without progress, as stopped (no_progress)", async () => {
    const workspace = await workspaceWith({ "README.md": "three tests\n" });
    const result = await run(workspace, (await script(STUCK)).path, [
      "--until-accepted",
      "10",
      "--no-progress",
      "2",
    ]);
    expectExit(result, 2);
    const summary = jsonSummary(result);
    expect(summary.reason).toBe("no_progress");
    expect(summary.attempts).toBe(3);
    const journal = await readJournal(workspace, String(summary.session));
    const attempts = ofType(journal, "acceptance.attempt").map((r) => r.data);
    expect(attempts.map((a) => [a.n, (a.progress as { stalled: number }).stalled, a.continued])).toEqual([
      [1, 0, true],
      [2, 1, true],
      [3, 2, false],
    ]);
    expect(ofType(journal, "model.started")).toHaveLength(3);
    expect(existsSync(join(workspace, "t1.txt"))).toBe(false);
  }, 60_000);

  it("stops as acceptance_failed when the attempts run out, and a resume keeps the recorded loop", async () => {
    const workspace = await workspaceWith({ "README.md": "three tests\n" });
    const model = (await script(fixer)).path;
    const first = await run(workspace, model, ["--until-accepted", "2"]);
    expectExit(first, 2);
    const summary = jsonSummary(first);
    expect(summary.reason).toBe("acceptance_failed");
    expect(summary.attempts).toBe(2);
    expect(existsSync(join(workspace, "t3.txt"))).toBe(false);
    // A later turn of the same session starts its own loop with the recorded --until-accepted 2
    // (not given again): the model fixes t3 on its first attempt.
    const next = startHarness([
      "run",
      "--script",
      model,
      "--workspace",
      workspace,
      "--session",
      String(summary.session),
      "--accept",
      CHECK,
      "--json",
      "go on",
    ]);
    const second = await finished(next);
    expectExit(second, 0);
    expect(jsonSummary(second).attempts).toBe(1);
    const journal = await readJournal(workspace, String(summary.session));
    expect(ofType(journal, "acceptance.attempt").map((r) => r.data.n)).toEqual([1, 2, 1]);
  }, 60_000);

  it("runs the same loop for a chat turn: the checks' feedback is the model's next input until they pass", async () => {
    const workspace = await workspaceWith({ "README.md": "three tests\n" });
    const model = await script(fixer);
    const config = join(await tempDir("harness-goal-config-"), "config.json");
    await writeFile(config, "{}");
    const child = spawn(
      process.execPath,
      [BIN, "chat", "--script", model.path, "--write", "allow", "--accept", CHECK, "--until-accepted", "5"],
      { cwd: workspace, env: { ...childEnv(), HARNESS_CONFIG: config }, stdio: ["pipe", "pipe", "pipe"] },
    );
    child.stdin.end("make the tests pass\n");
    const result = await finished(child);
    expect(result.code).toBe(0);
    for (const n of [1, 2, 3]) expect(await readFile(join(workspace, `t${n}.txt`), "utf8")).toBe("good\n");
    const [session] = sessionIds(workspace);
    const journal = await readJournal(workspace, String(session));
    const attempts = ofType(journal, "acceptance.attempt").map((r) => r.data);
    expect(attempts.map((a) => [a.n, a.passed, a.failed, a.continued])).toEqual([
      [1, 0, 1, true],
      [2, 0, 1, true],
      [3, 1, 0, false],
    ]);
    // The model was sent the person's line, then each failed attempt's feedback, within one turn.
    expect(await model.sent()).toEqual([
      { role: "user", content: "make the tests pass" },
      { role: "user", content: attempts[0]?.feedback },
      { role: "user", content: attempts[1]?.feedback },
    ]);
    expect(ofType(journal, "user.input")).toHaveLength(1);
    expect(ofType(journal, "run.finished").map((r) => r.data.status)).toEqual(["verified"]);
  }, 60_000);

  it("refuses a loop of no attempts with a usage error, recording nothing", async () => {
    const workspace = await workspaceWith({ "README.md": "x\n" });
    const result = await run(workspace, (await script(STUCK)).path, ["--until-accepted", "0"]);
    expectExit(result, 64);
    expect(result.stderr).toContain("--until-accepted");
    expect(sessionIds(workspace)).toEqual([]);
  }, 30_000);
});
