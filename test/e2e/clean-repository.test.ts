import type { ChildProcess } from "node:child_process";
import {
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  realpathSync,
  watch,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { git } from "../support/git.js";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
  jsonScript,
  ofType,
  REPO_ROOT,
  readJournal,
  removeTempDirs,
  sessionIds,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * Nothing harness does leaves anything in the user's repository: `git status --porcelain` is empty
 * after runs with shell calls, after a run interrupted (SIGINT, SIGTERM) or killed (SIGKILL) in the
 * middle of a shell call, and while the call runs. The sandbox mounts nothing onto a protected name
 * that does not exist (an empty `HEAD` or `harness.config.json` used to appear), `.harness/` is kept
 * out of `git status` by one line in `.git/info/exclude`, and the user's `.gitignore` is untouched.
 */

const GITIGNORE = "node_modules/\n*.log\n";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A git repository with a committed file, a .gitignore, and nothing untracked. */
async function gitWorkspace(files: Record<string, string> = {}): Promise<string> {
  const workspace = await workspaceWith({ "a.txt": "alpha\n", ".gitignore": GITIGNORE, ...files });
  git(workspace, "init", "-q", ".");
  git(workspace, "add", "-A");
  git(workspace, "commit", "-q", "-m", "start");
  expect(git(workspace, "status", "--porcelain")).toBe("");
  return workspace;
}

function excludeLines(workspace: string): string[] {
  return readFileSync(join(workspace, ".git/info/exclude"), "utf8")
    .split("\n")
    .filter((line) => line.trim() === ".harness/");
}

/** A call's `tool.result` data as journaled. */
async function callResult(
  workspace: string,
  session: string,
  callId: string,
): Promise<{ status: string; error_type?: string; data: Record<string, unknown> }> {
  const result = ofType(await readJournal(workspace, session), "tool.result").find(
    (record) => record.data.call_id === callId,
  );
  if (result === undefined) throw new Error(`no result for ${callId} in ${session}`);
  return result.data as { status: string; error_type?: string; data: Record<string, unknown> };
}

/** The stdout head a shell call's result recorded. */
async function shellStdout(workspace: string, session: string, callId: string): Promise<string> {
  const { data } = await callResult(workspace, session, callId);
  return (data.stdout as { head: string }).head;
}

/** The workspace's names as the command saw them, and git's view from inside. */
const LOOK = "ls -A; echo ---; git status --porcelain";
const SEEN = ".git\n.gitignore\n.harness\na.txt\n---\n";

describe("git status stays empty", () => {
  it("after runs whose shell calls touch nothing, which see no placeholder either; .harness/ is excluded once and .gitignore is unchanged", async () => {
    const workspace = await gitWorkspace();
    const script = await jsonScript([
      { text: "looking", calls: [{ id: "look-1", name: "shell", arguments: { command: LOOK } }] },
      { text: "again", calls: [{ id: "look-2", name: "shell", arguments: { command: "git status" } }] },
      { text: "nothing to change" },
    ]);
    for (let run = 0; run < 3; run++) {
      const session = `clean-${run}`;
      const result = await harness([
        "run",
        ...["--script", script, "--workspace", workspace, "--shell", "allow", "--session", session],
        "look around",
      ]);
      expectExit(result, 0);
      expect(git(workspace, "status", "--porcelain")).toBe("");
      // Inside the sandbox the command saw the workspace as it is: no HEAD, no harness.config.json.
      expect(await shellStdout(workspace, session, "look-1")).toBe(SEEN);
    }
    expect(excludeLines(workspace)).toEqual([".harness/"]);
    expect(readFileSync(join(workspace, ".gitignore"), "utf8")).toBe(GITIGNORE);
    expect(git(workspace, "check-ignore", ".harness")).toBe(".harness\n");
    expect(existsSync(join(workspace, "HEAD"))).toBe(false);
    expect(existsSync(join(workspace, "harness.config.json"))).toBe(false);
  }, 180_000);

  for (const signal of ["SIGINT", "SIGTERM", "SIGKILL"] as const) {
    it(`while a shell call runs and after harness gets ${signal} in its middle`, async () => {
      const workspace = await gitWorkspace();
      // The call says it runs (a file .gitignore ignores), then waits on a pipe nobody writes.
      const script = await jsonScript([
        {
          text: "waiting",
          calls: [
            {
              id: "wait-1",
              name: "shell",
              arguments: {
                command: "echo started > running.log; mkfifo /tmp/f; read x < /tmp/f",
                timeout_ms: 600_000,
              },
            },
          ],
        },
        { text: "done" },
      ]);
      const child = startHarness([
        "run",
        ...["--script", script, "--workspace", workspace, "--shell", "allow", "--session", "stopped"],
        ...["--events", "wait on a pipe"],
      ]);
      const ended = finished(child);
      await appears(join(workspace, "running.log"), child);
      // The sandbox has made every mount it makes: nothing shows on the host.
      expect(git(workspace, "status", "--porcelain")).toBe("");
      expect(readdirSync(workspace).sort()).toEqual([
        ".git",
        ".gitignore",
        ".harness",
        "a.txt",
        "running.log",
      ]);
      child.kill(signal);
      const result = await ended;
      if (signal === "SIGKILL") expect(result.signal).toBe("SIGKILL");
      else expect(result.code).toBe(130);
      expect(git(workspace, "status", "--porcelain")).toBe("");
      expect(readdirSync(workspace).sort()).toEqual([
        ".git",
        ".gitignore",
        ".harness",
        "a.txt",
        "running.log",
      ]);
      expect(excludeLines(workspace)).toEqual([".harness/"]);
      // An interrupted harness settles its guard; a killed one leaves it for the next open.
      expect(readdirSync(join(workspace, ".harness/guards")).length).toBe(signal === "SIGKILL" ? 1 : 0);
    }, 180_000);
  }
});

describe("a command cannot create a protected path", () => {
  it("harness.config.json, a root HEAD, or anything in .git: refused or moved to .harness/quarantine, and the call says so", async () => {
    const workspace = await gitWorkspace();
    const headBefore = readFileSync(join(workspace, ".git/HEAD"));
    const command = [
      `printf '{"sandbox": "off"}' > harness.config.json`,
      "printf 'ref: refs/heads/x\\n' > HEAD",
      "echo x > .git/HEAD",
      "touch .git/hooks/pre-commit",
      "echo kept > kept.txt",
    ].join("; ");
    const script = await jsonScript([
      { text: "tampering", calls: [{ id: "tamper", name: "shell", arguments: { command } }] },
      { text: "done" },
    ]);
    const result = await harness([
      "run",
      ...["--script", script, "--workspace", workspace, "--shell", "allow", "--session", "attack"],
      "tamper",
    ]);
    expectExit(result, 0);
    const call = await callResult(workspace, "attack", "tamper");
    expect(call.error_type).toBe("SANDBOX_VIOLATION");
    const quarantined = call.data.quarantined as { path: string; moved_to: string }[];
    expect(quarantined.map((moved) => moved.path).sort()).toEqual(["HEAD", "harness.config.json"]);
    for (const moved of quarantined) {
      expect(existsSync(join(workspace, moved.path))).toBe(false);
      expect(moved.moved_to.startsWith(".harness/quarantine/")).toBe(true);
    }
    const config = quarantined.find((moved) => moved.path === "harness.config.json")!;
    expect(readFileSync(join(workspace, config.moved_to), "utf8")).toBe('{"sandbox": "off"}');
    expect(readFileSync(join(workspace, ".git/HEAD"))).toEqual(headBefore);
    expect(existsSync(join(workspace, ".git/hooks/pre-commit"))).toBe(false);
    // What the command may do, it did.
    expect(git(workspace, "status", "--porcelain")).toBe("?? kept.txt\n");
  }, 180_000);

  it("a harness.config.json written by a command of a harness killed mid-call is moved away before the next run reads it", async () => {
    const workspace = await gitWorkspace();
    const script = await jsonScript([
      {
        text: "planting",
        calls: [
          {
            id: "plant",
            name: "shell",
            arguments: {
              command: `printf '{"sandbox": "off"}' > harness.config.json; mkfifo /tmp/f; read x < /tmp/f`,
              timeout_ms: 600_000,
            },
          },
        ],
      },
      { text: "done" },
    ]);
    const child = startHarness([
      "run",
      ...["--script", script, "--workspace", workspace, "--shell", "allow", "--session", "planted"],
      ...["--events", "plant"],
    ]);
    const ended = finished(child);
    // The command is waiting on its pipe; the config it wrote is on the host until harness checks.
    await appears(join(workspace, "harness.config.json"), child);
    child.kill("SIGKILL");
    await ended;
    expect(existsSync(join(workspace, "harness.config.json"))).toBe(true);

    const next = await jsonScript([
      {
        text: "look",
        calls: [
          {
            id: "probe",
            name: "shell",
            arguments: { command: "cat /etc/hostname >/dev/null; echo sandboxed" },
          },
        ],
      },
      { text: "done" },
    ]);
    const after = await harness([
      "run",
      ...["--script", next, "--workspace", workspace, "--shell", "allow", "--session", "after", "--json"],
      "look",
    ]);
    expectExit(after, 0);
    expect(after.stderr).toContain(
      "harness.config.json was created by a sandboxed command while it was protected",
    );
    expect(existsSync(join(workspace, "harness.config.json"))).toBe(false);
    // The planted `"sandbox": "off"` was never obeyed.
    const spawned = ofType(await readJournal(workspace, "after"), "process.spawned");
    expect(spawned.map((record) => record.data.sandbox_profile)).toEqual(["workspace-write"]);
    expect(git(workspace, "status", "--porcelain")).toBe("");
    expect(readdirSync(join(workspace, ".harness/guards"))).toEqual([]);
  }, 180_000);
});

describe("harness inside harness's sandbox", () => {
  it("starts and reads its config (no placeholder config to trip on), runs the demo, and leaves git status clean", async () => {
    const workspace = await gitWorkspace({ "sub/keep.txt": "kept\n" });
    // The sandbox shows only what it is told: the built CLI and its packages, read-only.
    const config = join(await tempDir("harness-config-"), "config.json");
    writeFileSync(
      config,
      JSON.stringify({
        sandbox: {
          profile: "workspace-write",
          read_paths: [REPO_ROOT, realpathSync(join(REPO_ROOT, "node_modules"))],
        },
      }),
    );
    const nested = `${process.execPath} ${join(REPO_ROOT, "dist/src/cli/bin.js")}`;
    const script = await jsonScript([
      {
        text: "nesting",
        calls: [
          { id: "demo", name: "shell", arguments: { command: `${nested} demo --workspace sub` } },
          {
            id: "root-config",
            name: "shell",
            arguments: { command: `${nested} models --workspace . --json` },
          },
          { id: "root-run", name: "shell", arguments: { command: `${nested} demo --workspace .` } },
          {
            id: "nested-shell",
            name: "shell",
            arguments: {
              command: `${nested} run --script inner.json --workspace sub --shell allow 'echo'`,
            },
          },
        ],
      },
      { text: "done" },
    ]);
    writeFileSync(
      join(workspace, "inner.json"),
      JSON.stringify({
        replies: [
          { text: "x", calls: [{ id: "in", name: "shell", arguments: { command: "echo inner" } }] },
          { text: "ok" },
        ],
      }),
    );
    git(workspace, "add", "inner.json");
    git(workspace, "commit", "-q", "-m", "inner script");
    const env = { ...childEnv(), HARNESS_CONFIG: config };
    const result = await finished(
      startHarness(
        [
          "run",
          "--script",
          script,
          "--workspace",
          workspace,
          "--shell",
          "allow",
          "--session",
          "outer",
          "nest",
        ],
        { env },
      ),
    );
    expectExit(result, 0);
    const demo = await shellStdout(workspace, "outer", "demo");
    expect(demo).toContain("status    verified");
    expect(readFileSync(join(workspace, "sub/hello.txt"), "utf8")).toBe("hello, harness\n");
    // On the outer run's own workspace it reads the config (the root harness.config.json used to
    // be an unreadable placeholder: exit 64), and says why it cannot record a session there.
    const models = await callResult(workspace, "outer", "root-config");
    expect(models.status).toBe("ok");
    const rootRun = await callResult(workspace, "outer", "root-run");
    expect((rootRun.data.stderr as { head: string }).head).toContain(
      "its .harness directory is read-only here, so no session can be recorded",
    );
    // No bubblewrap inside bubblewrap: the nested harness says why its shell call cannot run.
    const records = await readJournal(
      join(workspace, "sub"),
      sessionIds(join(workspace, "sub")).find((id) => id !== "demo")!,
    );
    const inner = ofType(records, "tool.result")[0]?.data as { error_type: string; summary: string };
    expect(inner.error_type).toBe("SANDBOX_UNAVAILABLE");
    expect(inner.summary).toContain("inside another bubblewrap sandbox");
    expect(inner.summary).not.toContain("apt-get install");
    // The demo's one change is the only thing git sees; the nested .harness is excluded too.
    expect(git(workspace, "status", "--porcelain")).toBe("?? sub/hello.txt\n");
    expect(lstatSync(join(workspace, "sub/.harness")).isDirectory()).toBe(true);
  }, 180_000);
});

/** Resolve when `file` exists (a sandboxed command made it; it reports nothing else). */
function appears(file: string, child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    const watcher = watch(dirname(file), () => check());
    const done = (error?: Error) => {
      watcher.close();
      child.off("exit", onExit);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onExit = () => done(new Error(`harness ended before ${file} appeared`));
    const check = () => {
      if (existsSync(file)) done();
    };
    child.on("exit", onExit);
    check();
  });
}
