import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  fixture,
  harness,
  journalFile,
  jsonSummary,
  ofType,
  onStdoutLine,
  readJournal,
  removeTempDirs,
  startHarness,
  workspaceWith,
} from "./helpers.js";

const TURNS = fixture("turns.mjs");

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const run = (workspace: string, args: string[]) =>
  harness(["run", "--script", TURNS, "--workspace", workspace, "--json", ...args]);

describe("sessions with many turns through the CLI", () => {
  it("run --continue sends the latest session's history and the new prompt as its next turn", async () => {
    const workspace = await workspaceWith({});
    const older = await run(workspace, ["--session", "older", "an older task"]);
    expectExit(older, 0);
    const first = await run(workspace, ["--session", "main", "say hello"]);
    expectExit(first, 0);
    const next = await run(workspace, ["--continue", "now say goodbye"]);
    expectExit(next, 0);
    const summary = jsonSummary(next);
    expect(summary).toMatchObject({ status: "unverified", session: "main", model_requests: 2 });
    // system, goal, first answer, new prompt
    expect(summary.answer).toBe('heard ["say hello","now say goodbye"] in 4 messages');
    const records = await readJournal(workspace, "main");
    expect(ofType(records, "user.input").map((r) => r.data)).toEqual([
      { text: "say hello", turn: 1 },
      { text: "now say goodbye", turn: 2 },
    ]);
    expect(ofType(await readJournal(workspace, "older"), "user.input")).toHaveLength(1);

    // --session ID PROMPT does the same for a named session; the goal itself still resumes.
    const third = await run(workspace, ["--session", "older", "and a third thing"]);
    expect(jsonSummary(third).answer).toBe('heard ["an older task","and a third thing"] in 4 messages');
    const inspect = await harness(["inspect", "older", "--workspace", workspace]);
    expect(inspect.stdout).toContain("turn 2, user: and a third thing");
  });

  it("run --continue with no session in the workspace is a usage error that says how to start one", async () => {
    const workspace = await workspaceWith({});
    const result = await run(workspace, ["--continue", "hello"]);
    expectExit(result, 64);
    expect(result.stderr).toContain("no session to continue");
    expect(result.stderr).toContain(`harness run --workspace ${workspace}`);
  });

  it("a second turn killed by SIGKILL resumes that turn: its input is not repeated and nothing is lost", async () => {
    const workspace = await workspaceWith({});
    expectExit(await run(workspace, ["--session", "k", "first task"]), 0);
    const slow = "second task (slow)";
    const child = startHarness(
      ["run", "--script", TURNS, "--workspace", workspace, "--session", "k", "--events", slow],
      { env: { ...childEnv(), HARNESS_TEST_SLOW_INPUT: slow } },
    );
    const seen: string[] = [];
    onStdoutLine(child, (line) => {
      const type = (JSON.parse(line) as { type: string }).type;
      seen.push(type);
      // The turn's request is on its way (the model waits): kill the whole process.
      if (type === "model.started" && seen.includes("user.input")) child.kill("SIGKILL");
    });
    const killed = await finished(child);
    expect(killed.signal).toBe("SIGKILL");
    const before = await readJournal(workspace, "k");
    expect(before.at(-1)!.type).toBe("model.started");

    const resumed = await harness(["resume", "k", "--script", TURNS, "--workspace", workspace, "--json"]);
    expectExit(resumed, 0);
    expect(jsonSummary(resumed).answer).toBe(`heard ["first task","${slow}"] in 4 messages`);
    const after = await readJournal(workspace, "k");
    expect(after.slice(0, before.length)).toEqual(before);
    const added = after.slice(before.length).map((r) => r.type);
    expect(added).toContain("lock.recovered");
    expect(added).not.toContain("user.input");
    expect(ofType(after, "user.input").map((r) => r.data.turn)).toEqual([1, 2]);
  });

  it("fork --at starts a verified session from the parent's first turn; the parent's bytes never change", async () => {
    const workspace = await workspaceWith({});
    expectExit(await run(workspace, ["--session", "p", "first"]), 0);
    const firstTurn = await readJournal(workspace, "p");
    const endOfFirst = firstTurn.at(-1)!;
    expect(endOfFirst.type).toBe("run.finished");
    expectExit(await run(workspace, ["--session", "p", "second in parent"]), 0);
    const parentBytes = await readFile(journalFile(workspace, "p"));

    const forked = await harness([
      "fork",
      "p",
      "--at",
      String(endOfFirst.seq),
      "--session",
      "f",
      "--workspace",
      workspace,
      "--json",
    ]);
    expectExit(forked, 0);
    expect(JSON.parse(forked.stdout)).toMatchObject({
      session: "f",
      parent: "p",
      at_seq: endOfFirst.seq,
      at_hash: endOfFirst.hash,
      copied: endOfFirst.seq + 1,
    });
    const verify = await harness(["journal", "verify", "f", "--workspace", workspace]);
    expectExit(verify, 0);
    const records = await readJournal(workspace, "f");
    expect(records[0]).toMatchObject({
      type: "session.forked",
      data: { parent: "p", at_hash: endOfFirst.hash },
    });
    expect(records.slice(1).map((r) => [r.type, r.data])).toEqual(firstTurn.map((r) => [r.type, r.data]));

    const next = await run(workspace, ["--session", "f", "second in fork"]);
    expectExit(next, 0);
    expect(jsonSummary(next).answer).toBe('heard ["first","second in fork"] in 4 messages');
    expect(await readFile(journalFile(workspace, "p"))).toEqual(parentBytes);

    // A cut inside a running call, an unknown record and an existing target are refused.
    const beyond = await harness(["fork", "p", "--at", "9999", "--workspace", workspace]);
    expectExit(beyond, 64);
    const taken = await harness(["fork", "p", "--session", "f", "--workspace", workspace]);
    expectExit(taken, 64);
    expect(taken.stderr).toContain("already exists");
    expect(await readFile(journalFile(workspace, "p"))).toEqual(parentBytes);
  });
});
