import { spawn } from "node:child_process";
import { utimesSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BIN,
  type CliResult,
  childEnv,
  ensureBuilt,
  finished,
  fixture,
  harness,
  journalFile,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  sessionIds,
  workspaceWith,
} from "./helpers.js";

const ECHO = fixture("echo-goal.mjs");

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** `harness ARGS` with `input` piped to its stdin. */
function withStdin(args: readonly string[], input: string): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], { env: childEnv(), stdio: ["pipe", "pipe", "pipe"] });
  child.stdin.end(input);
  return finished(child);
}

describe("the goal from stdin", () => {
  it("harness run - reads the goal from stdin; it is journaled and sent to the model as typed", async () => {
    const workspace = await workspaceWith({});
    const goal = "explain the layout\nof this repository";
    const result = await withStdin(
      ["run", "--script", ECHO, "--workspace", workspace, "--json", "-"],
      `${goal}\n`,
    );
    expect(result.code).toBe(0);
    const [id] = sessionIds(workspace);
    const started = ofType(await readJournal(workspace, id!), "session.started")[0]!;
    expect(started.data.goal).toBe(goal);
    expect(String(jsonSummary(result).answer)).toContain(`SENT<${goal}`);
  });

  it("piped stdin without a goal argument is the goal; an empty pipe is a usage error", async () => {
    const workspace = await workspaceWith({});
    const result = await withStdin(
      ["run", "--script", ECHO, "--workspace", workspace, "--json"],
      "list the files",
    );
    expect(result.code).toBe(0);
    const [id] = sessionIds(workspace);
    expect(ofType(await readJournal(workspace, id!), "session.started")[0]!.data.goal).toBe("list the files");
    const empty = await withStdin(["run", "--script", ECHO, "--workspace", workspace, "-"], "");
    expect(empty.code).toBe(64);
    expect(empty.stderr).toContain("'-' reads the goal from stdin, which was empty");
    expect(sessionIds(workspace)).toHaveLength(1);
  });
});

describe("session ids: unique prefixes and --last", () => {
  it("a unique prefix names the session everywhere; an ambiguous one lists the matches; --last takes the latest", async () => {
    const workspace = await workspaceWith({});
    for (const id of ["alpha-1", "alpha-2", "beta-1"]) {
      const result = await harness([
        "run",
        "--script",
        ECHO,
        "--workspace",
        workspace,
        "--session",
        id,
        `goal ${id}`,
      ]);
      expect(result.code, result.stderr).toBe(0);
    }
    // The oldest-named session is the one written last.
    const later = new Date(Date.now() + 60_000);
    utimesSync(journalFile(workspace, "alpha-1"), later, later);

    const inspected = await harness(["inspect", "be", "--workspace", workspace, "--json"]);
    expect(inspected.code, inspected.stderr).toBe(0);
    expect(JSON.parse(inspected.stdout).session).toBe("beta-1");
    const verified = await harness(["journal", "verify", "beta", "--workspace", workspace]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toContain("journal beta-1: intact");

    const ambiguous = await harness(["inspect", "alpha", "--workspace", workspace]);
    expect(ambiguous.code).toBe(64);
    expect(ambiguous.stderr).toContain(
      '"alpha" is the start of 2 sessions (alpha-1, alpha-2); type more of the id',
    );

    const none = await harness(["inspect", "gamma", "--workspace", workspace]);
    expect(none.code).toBe(64);
    expect(none.stderr).toContain(`no session "gamma" in`);

    const last = await harness(["inspect", "--last", "--workspace", workspace, "--json"]);
    expect(last.code, last.stderr).toBe(0);
    expect(JSON.parse(last.stdout).session).toBe("alpha-1");

    const resumed = await harness(["resume", "--last", "--script", ECHO, "--workspace", workspace, "--json"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(jsonSummary(resumed).session).toBe("alpha-1");

    const both = await harness(["inspect", "beta", "--last", "--workspace", workspace]);
    expect(both.code).toBe(64);
    expect(both.stderr).toContain("name a session or pass --last, not both");
    const neither = await harness(["inspect", "--workspace", workspace]);
    expect(neither.code).toBe(64);
    expect(neither.stderr).toContain("which session? harness inspect SESSION (or --last");
  });
});

describe("every command that takes a session id takes a unique start of it", () => {
  it("fork, undo, audit, report, run --session and chat --session resolve a prefix; run --session with an unknown id starts that session", async () => {
    const workspace = await workspaceWith({});
    const started = await harness([
      "run",
      "--script",
      ECHO,
      "--workspace",
      workspace,
      "--session",
      "gamma-77",
      "first",
    ]);
    expect(started.code, started.stderr).toBe(0);

    const forked = await harness([
      "fork",
      "gam",
      "--workspace",
      workspace,
      "--session",
      "gamma-fork",
      "--json",
    ]);
    expect(forked.code, forked.stderr).toBe(0);
    expect(JSON.parse(forked.stdout)).toMatchObject({ session: "gamma-fork", parent: "gamma-77" });
    // Two sessions now start with "gamma": a prefix shared by both is refused, naming them.
    const ambiguous = await harness(["undo", "gamma", "--workspace", workspace, "--dry-run"]);
    expect(ambiguous.code).toBe(64);
    expect(ambiguous.stderr).toContain('"gamma" is the start of 2 sessions');

    for (const args of [
      ["undo", "gamma-7", "--dry-run", "--json"],
      ["audit", "gamma-7", "--json"],
      ["report", "gamma-7", "-o", "-"],
    ]) {
      const result = await harness([...args, "--workspace", workspace]);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(0);
      expect(result.stdout).toContain("gamma-77");
    }

    const continued = await harness([
      "run",
      "--script",
      ECHO,
      "--workspace",
      workspace,
      "--session",
      "gamma-7",
      "--json",
      "second",
    ]);
    expect(continued.code, continued.stderr).toBe(0);
    expect(jsonSummary(continued).session).toBe("gamma-77");
    const inputs = ofType(await readJournal(workspace, "gamma-77"), "user.input").map((r) => r.data.text);
    expect(inputs).toEqual(["first", "second"]);

    const chatted = await withStdin(
      ["chat", "--script", ECHO, "--workspace", workspace, "--session", "gamma-f"],
      "third\n",
    );
    expect(chatted.code, chatted.stderr).toBe(0);
    const forkInputs = ofType(await readJournal(workspace, "gamma-fork"), "user.input").map(
      (r) => r.data.text,
    );
    expect(forkInputs).toEqual(["first", "third"]);

    // An id no session starts with names a new session, as before.
    const fresh = await harness([
      "run",
      "--script",
      ECHO,
      "--workspace",
      workspace,
      "--session",
      "delta-1",
      "--json",
      "new",
    ]);
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(sessionIds(workspace).sort()).toEqual(["delta-1", "gamma-77", "gamma-fork"]);
  });
});
