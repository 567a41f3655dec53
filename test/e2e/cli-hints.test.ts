import { spawn } from "node:child_process";
import { chmod, readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeReply } from "../e2e-providers/wire.js";
import { freePort } from "../support/net.js";
import {
  BIN,
  type CliResult,
  childEnv,
  ensureBuilt,
  finished,
  fixture,
  ofType,
  pasteAsPrinted,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A directory holding a `harness` command (the built CLI), for running hints exactly as printed. */
async function harnessOnPath(): Promise<string> {
  const dir = await tempDir("harness-bin-");
  await writeFile(
    join(dir, "harness"),
    `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"\n`,
  );
  await chmod(join(dir, "harness"), 0o755);
  return dir;
}

/** The summary's `next` commands. */
function nextCommands(output: string): string[] {
  return [...output.matchAll(/^next {6}(harness .*)$/gm)].map((m) => m[1]!);
}

/** Run one printed line in a shell from `cwd`, as a user pasting it would. */
function runAsPrinted(line: string, cwd: string, bin: string, env: NodeJS.ProcessEnv = childEnv()) {
  const child = spawn("bash", ["-c", line], {
    cwd,
    env: { ...env, PATH: `${bin}:${process.env.PATH ?? ""}` },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return finished(child);
}

/** Run harness from `cwd` (not the workspace). */
function harnessIn(cwd: string, args: string[], env: NodeJS.ProcessEnv = childEnv()): Promise<CliResult> {
  return finished(spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] }));
}

describe("every printed next step works as printed from where the user is", () => {
  it("budget used up: the resume hint names the workspace, the script and a larger budget, and it runs", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hello\n" });
    const elsewhere = await tempDir("harness-cwd-");
    const bin = await harnessOnPath();
    const first = await harnessIn(elsewhere, [
      "run",
      "--script",
      fixture("read-then-answer.mjs"),
      "--workspace",
      workspace,
      "--write",
      "deny",
      "--max-model-requests",
      "1",
      "read the notes",
    ]);
    expect(first.code, first.stderr).toBe(2);
    expect(first.stdout).toContain("stopped (budget_exhausted)");
    const next = nextCommands(first.stdout);
    expect(next).toHaveLength(1);
    expect(next[0]).toMatch(
      /^harness resume \S+ --script \S+read-then-answer\.mjs --max-model-requests 51 --workspace /,
    );
    const resumed = await runAsPrinted(next[0]!, elsewhere, bin);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/^status +unverified$/m);
    expect(nextCommands(resumed.stdout)).toEqual([]);
  });

  it("the resume hint repeats everything the journal does not keep (script, budgets, pool, acceptance timeout and commands), replacing the used-up budget, and continues the session as pasted with /bin/sh", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hello\n" });
    const elsewhere = await tempDir("harness-cwd-");
    const accept = "sleep 5; test -f notes.txt";
    const first = await harnessIn(elsewhere, [
      "run",
      "--script",
      fixture("read-then-answer.mjs"),
      "--workspace",
      workspace,
      "--write",
      "deny",
      "--max-model-requests",
      "1",
      "--max-tool-calls",
      "9",
      "--pool-size",
      "2",
      "--accept-timeout",
      "400",
      "--accept",
      accept,
      "read the notes",
    ]);
    expect(first.code, first.stderr).toBe(2);
    const [next = "", ...more] = nextCommands(first.stdout);
    expect(more).toEqual([]);
    const id = /^session +(\S+)$/m.exec(first.stdout)?.[1] ?? "";
    expect(next).toBe(
      `harness resume ${id} --script ${fixture("read-then-answer.mjs")} --max-tool-calls 9 --pool-size 2 ` +
        `--accept-timeout 400 --accept '${accept}' --max-model-requests 51 --workspace ${workspace}`,
    );
    const pasted = await pasteAsPrinted(next, await tempDir("harness-cwd-"));
    // The session went on: resumed, its answer recorded; the acceptance ran with the run's own
    // 400 ms timeout (the default would have let the 5 s command pass).
    expect(pasted.code, pasted.stderr).toBe(2);
    const journal = await readJournal(workspace, id);
    expect(ofType(journal, "session.resumed")).toHaveLength(1);
    expect(ofType(journal, "model.started")).toHaveLength(2);
    const checks = ofType(journal, "acceptance.checked").map(
      (r) => r.data.checks as { name: string; passed: boolean; duration_ms: number }[],
    );
    expect(checks).toEqual([[expect.objectContaining({ name: accept, passed: false })]]);
    expect(checks[0]?.[0]?.duration_ms).toBeLessThan(4000);
  });

  it("proposals waiting: diff and apply hints (and the ones in the reason) work from another directory", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const elsewhere = await tempDir("harness-cwd-");
    const bin = await harnessOnPath();
    const first = await harnessIn(elsewhere, [
      "run",
      "--script",
      fixture("read-edit.mjs"),
      "--workspace",
      workspace,
      "--write",
      "propose",
      "finalise the notes",
    ]);
    expect(first.code, first.stderr).toBe(4);
    const why = /^why +(.*)$/m.exec(first.stdout)?.[1] ?? "";
    const inReason = [...why.matchAll(/harness (?:diff|apply) \S+ --workspace [^\s;]+/g)].map((m) => m[0]);
    expect(inReason).toHaveLength(2);
    const next = nextCommands(first.stdout);
    expect(next).toEqual(inReason);
    const diff = await runAsPrinted(next[0]!, elsewhere, bin);
    expect(diff.code, diff.stderr).toBe(0);
    expect(diff.stdout).toContain("+status: final");
    const apply = await runAsPrinted(next[1]!, elsewhere, bin);
    expect(apply.code, apply.stderr).toBe(0);
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: final\n");
  });

  it("no --workspace when the workspace is the current directory", async () => {
    const workspace = await workspaceWith({ "notes.txt": "hello\n" });
    const first = await harnessIn(workspace, [
      "run",
      "--script",
      fixture("read-then-answer.mjs"),
      "--max-model-requests",
      "1",
      "read the notes",
    ]);
    const [next] = nextCommands(first.stdout);
    expect(next).toMatch(/^harness resume \S+ --script \S+ --max-model-requests 51$/);
    const resumed = await runAsPrinted(next!, workspace, await harnessOnPath());
    expect(resumed.code, resumed.stderr).toBe(0);
  });

  it("a server that is not running: the URL is named, the question asked, and the printed resume works once it runs", async () => {
    const workspace = await workspaceWith({});
    const elsewhere = await tempDir("harness-cwd-");
    const bin = await harnessOnPath();
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}/v1`;
    const env = { ...childEnv(), HARNESS_CONFIG: join(await tempDir(), "config.json") };
    await writeFile(env.HARNESS_CONFIG!, "{}");
    const first = await harnessIn(
      elsewhere,
      [
        "run",
        ...["--provider", "openai-compatible", "--model", "m", "--base-url", baseUrl],
        ...["--context-window", "100000", "--workspace", workspace, "--max-model-requests", "1"],
        "say hi",
      ],
      env,
    );
    expect(first.code, first.stderr).toBe(2);
    expect(first.stderr).toContain(`harness: cannot connect to ${baseUrl}: is the server running?`);
    const next = nextCommands(first.stdout);
    expect(next).toHaveLength(1);
    expect(next[0]).toContain("--workspace");
    const server = await serveChat(port, "hi there");
    try {
      const resumed = await runAsPrinted(next[0]!, elsewhere, bin, env);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toContain("hi there");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

/** A Chat Completions server on `port` that answers every request with `text`. */
async function serveChat(port: number, text: string): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const wire = writeReply("chat", { kind: "text", text });
      res.writeHead(wire.status, wire.headers);
      res.end("body" in wire ? wire.body : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return server;
}
