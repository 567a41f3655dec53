import { spawn } from "node:child_process";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { killSurvivors } from "../../src/sandbox/tree.js";
import { ERROR_CODES, ToolError } from "../../src/tools/errors.js";
import { createShellTool, type ShellSpawnInfo, type ShellToolOptions } from "../../src/tools/shell/shell.js";
import {
  dirsPerTest,
  eventually,
  failureOf,
  liveGroup,
  liveSleeps,
  shellStandIn,
  type TestContext,
  toolContext,
  uniqueSleep,
} from "./helpers.js";

const dirs = dirsPerTest("shell");

function setup(options: Partial<ShellToolOptions> = {}, hostRoot: string | null = dirs.workspace) {
  const spawned: ShellSpawnInfo[] = [];
  const tool = createShellTool({
    sandbox: { profile: "none" },
    onSpawn: (info) => {
      spawned.push(info);
    },
    ...options,
  });
  const test: TestContext = toolContext(hostRoot ?? undefined, path.join(dirs.scratch, "artifacts"));
  return { tool, spawned, ...test };
}

interface StreamData {
  bytes: number;
  lines: number;
  truncated: boolean;
  head: string;
  tail: string;
  artifact: { id: string; bytes: number } | null;
}

describe("shell tool (unsandboxed)", () => {
  it("declares its contract", () => {
    const { tool } = setup();
    expect(tool.name).toBe("shell");
    expect(tool.version).toBe("1");
    expect(tool.effect).toBe("process_execution");
    expect(tool.idempotency).toBe("non_idempotent");
    expect(tool.resources({ command: "ls" })).toEqual({ exclusive: true });
    expect(tool.concurrencySafe({ command: "ls" })).toBe(false);
  });

  it("rejects coerced, unknown and over-limit arguments", () => {
    const { tool } = setup({ maxTimeoutMs: 10_000 });
    expect(tool.input.safeParse({ command: "ls", timeout_ms: "5000" }).success).toBe(false);
    expect(tool.input.safeParse({ command: "ls", timeout_ms: 1.5 }).success).toBe(false);
    expect(tool.input.safeParse({ command: "ls", sandbox: "off" }).success).toBe(false);
    expect(tool.input.safeParse({ command: "" }).success).toBe(false);
    const parsed = tool.input.parse({ command: "ls", timeout_ms: 20_000 });
    let error: unknown;
    try {
      tool.validate?.(parsed);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe("SEMANTIC_VALIDATION_ERROR");
    expect(() => tool.validate?.(tool.input.parse({ command: "ls", timeout_ms: 10_000 }))).not.toThrow();
  });

  it("runs in the workspace with stdin closed and reports the output", async () => {
    const { tool, context } = setup();
    // `cat` would block forever on an open stdin; with stdin closed it sees end-of-file at once.
    const output = await tool.execute(
      { command: "cat; pwd; printf 'a\\nb\\n' >&2", timeout_ms: 20_000 },
      context,
    );
    const data = output.data as Record<string, unknown>;
    expect(data.outcome).toBe("exited");
    expect(data.exit_code).toBe(0);
    expect(data.sandbox).toBe("none");
    expect(data.killed_processes).toBe(0);
    const stdout = data.stdout as StreamData;
    expect(stdout.head).toBe(`${realpathSync(dirs.workspace)}\n`);
    expect(stdout.lines).toBe(1);
    const stderr = data.stderr as StreamData;
    expect(stderr).toMatchObject({ bytes: 4, lines: 2, truncated: false, head: "a\nb\n" });
    expect(output.content).toContain("exit code 0");
  });

  it("reports a non-zero exit as PROCESS_ERROR with the exit code and output", async () => {
    const { tool, context } = setup();
    const error = await failureOf(tool.execute({ command: "echo partial; echo oops >&2; exit 3" }, context));
    expect(error.code).toBe("PROCESS_ERROR");
    expect(ERROR_CODES[error.code].status).toBe("error");
    expect(error.data).toMatchObject({ outcome: "exited", exit_code: 3 });
    expect((error.data!.stdout as StreamData).head).toBe("partial\n");
    expect((error.data!.stderr as StreamData).head).toBe("oops\n");
    expect(error.message).toContain("exit code 3");
    expect(error.message).toContain("oops");
  });

  it("kills the whole process group on timeout", async () => {
    const { tool, context, spawned } = setup({ killGraceMs: 500 });
    const token = uniqueSleep(100);
    const error = await failureOf(
      tool.execute({ command: `sleep ${token} & sleep ${token} & wait`, timeout_ms: 2_000 }, context),
    );
    expect(error.code).toBe("TIMEOUT");
    expect(ERROR_CODES[error.code].status).toBe("timeout");
    expect(error.data).toMatchObject({ outcome: "timeout", killed_processes: 3 });
    expect(spawned).toHaveLength(1);
    expect(spawned[0]!.pgid).toBe(spawned[0]!.pid);
    expect(spawned[0]!.callId).toBe(context.callId);
    expect(liveGroup(spawned[0]!.pgid)).toEqual([]);
    expect(liveSleeps(token)).toEqual([]);
  });

  it("escalates to SIGKILL when processes ignore SIGTERM", async () => {
    const { tool, context, spawned } = setup({ killGraceMs: 200 });
    const token = uniqueSleep(100);
    const error = await failureOf(
      tool.execute({ command: `trap '' TERM; sleep ${token} & sleep ${token}`, timeout_ms: 2_000 }, context),
    );
    expect(error.code).toBe("TIMEOUT");
    expect(error.data?.killed_processes).toBe(3);
    expect(liveGroup(spawned[0]!.pgid)).toEqual([]);
    expect(liveSleeps(token)).toEqual([]);
  });

  it("cancels: aborting the signal kills the tree and reports CANCELLED", async () => {
    const { tool, context, controller, spawned } = setup({ killGraceMs: 500 });
    const token = uniqueSleep(100);
    const running = tool.execute({ command: `sleep ${token} & sleep ${token} & sleep ${token}` }, context);
    expect(await eventually(() => liveSleeps(token).length === 3)).toBe(true);
    controller.abort();
    const error = await failureOf(running);
    expect(error.code).toBe("CANCELLED");
    expect(error.data).toMatchObject({ outcome: "cancelled", killed_processes: 4 });
    expect(liveGroup(spawned[0]!.pgid)).toEqual([]);
    expect(liveSleeps(token)).toEqual([]);
  });

  it("does not run at all when already cancelled", async () => {
    const { tool, context, controller, spawned } = setup();
    controller.abort();
    const marker = path.join(dirs.workspace, "ran");
    const error = await failureOf(tool.execute({ command: `touch ${marker}` }, context));
    expect(error.code).toBe("CANCELLED");
    expect(spawned).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it("kills background children left at exit instead of waiting on their pipes", async () => {
    const { tool, context, spawned } = setup({ killGraceMs: 500 });
    const token = uniqueSleep(100);
    // The background sleeps keep stdout open; the call must still finish when `echo` exits.
    const output = await tool.execute(
      { command: `sleep ${token} & nohup sleep ${token} >/dev/null 2>&1 & echo started`, timeout_ms: 60_000 },
      context,
    );
    const data = output.data as Record<string, unknown>;
    expect(data).toMatchObject({ outcome: "exited", exit_code: 0, killed_processes: 2 });
    expect(output.content).toContain("2 background processes still running at exit were killed");
    expect(liveGroup(spawned[0]!.pgid)).toEqual([]);
    expect(liveSleeps(token)).toEqual([]);
  });

  it("does not wait for pipes held by a process that left the group (setsid)", async () => {
    const { tool, context, spawned } = setup();
    const escaped = uniqueSleep(100);
    try {
      // Without a sandbox a setsid escapee outlives the group (the documented limit of process
      // groups); the call must still finish instead of waiting for the escapee's stdout to close.
      const output = await tool.execute(
        { command: `setsid sleep ${escaped} & echo done`, timeout_ms: 60_000 },
        context,
      );
      expect((output.data as Record<string, unknown>).exit_code).toBe(0);
      expect(((output.data as Record<string, unknown>).stdout as StreamData).head).toBe("done\n");
      expect(liveGroup(spawned[0]!.pgid)).toEqual([]);
    } finally {
      for (const pid of liveSleeps(escaped)) process.kill(pid, "SIGKILL");
    }
  });

  it("streams full output into an artifact and previews head and tail", async () => {
    const { tool, context, artifacts } = setup();
    // 20 000 numbered lines, ~129 KB: far more than the 8 KiB head + 8 KiB tail.
    const output = await tool.execute({ command: "seq -w 1 20000 | sed 's/$/ line/'" }, context);
    const stdout = (output.data as Record<string, unknown>).stdout as StreamData;
    const expected = Array.from(
      { length: 20_000 },
      (_, i) => `${String(i + 1).padStart(5, "0")} line\n`,
    ).join("");
    expect(stdout.bytes).toBe(expected.length);
    expect(stdout.lines).toBe(20_000);
    expect(stdout.truncated).toBe(true);
    expect(stdout.head).toBe(expected.slice(0, 8192));
    expect(stdout.tail).toBe(expected.slice(-8192));
    expect(stdout.artifact).not.toBeNull();
    const stored = await artifacts.read(stdout.artifact!.id);
    expect(Buffer.from(stored!).toString()).toBe(expected);
    expect(output.content).toContain(`${expected.length - 16384} bytes omitted`);
    expect(output.content).toContain(stdout.artifact!.id);
  });

  it("passes only allowed, non-secret environment variables", async () => {
    const { tool, context } = setup({
      environment: {
        PATH: process.env.PATH,
        HOME: "/home/test",
        LC_ALL: "C.UTF-8",
        HARNESS_TEST_API_KEY: "canary-api-key-5f1",
        GITHUB_TOKEN: "canary-github-token-9c2",
        OPENAI_API_KEY: "canary-openai-77a",
        DB_PASSWORD: "canary-password-31b",
        EXPLICIT_TOKEN: "passed-on-purpose",
        PROJECT_MODE: "dev",
        PROJECT_SECRET: "canary-secret-d4e",
        UNLISTED: "canary-unlisted",
      },
      allowEnv: ["PROJECT_MODE", "PROJECT_SECRET"],
      passEnv: ["EXPLICIT_TOKEN"],
    });
    const output = await tool.execute(
      { command: 'env; test "$EXPLICIT_TOKEN" = passed-on-purpose && echo explicit-token-received' },
      context,
    );
    const text = ((output.data as Record<string, unknown>).stdout as StreamData).head;
    expect(text).not.toContain("canary");
    // Filtered, not only scrubbed: the credential-looking names never reach the command.
    expect(text).not.toMatch(
      /^(HARNESS_TEST_API_KEY|GITHUB_TOKEN|OPENAI_API_KEY|DB_PASSWORD|PROJECT_SECRET|UNLISTED)=/m,
    );
    // Passed on purpose, it reaches the command; its value is still scrubbed from the output.
    expect(text).toContain("explicit-token-received");
    expect(text).toContain("EXPLICIT_TOKEN=[redacted:EXPLICIT_TOKEN]");
    expect(text).not.toContain("passed-on-purpose");
    expect(text).toContain("PROJECT_MODE=dev");
    expect(text).toContain("HOME=/home/test");
    expect(text).toContain("LC_ALL=C.UTF-8");
  });

  it("takes secrets from the real process environment out too", async () => {
    process.env.HARNESS_TEST_API_KEY = "canary-from-process-env";
    process.env.GITHUB_TOKEN = "canary-github-from-process-env";
    try {
      const { tool, context } = setup();
      const output = await tool.execute({ command: "env; echo end" }, context);
      const text = ((output.data as Record<string, unknown>).stdout as StreamData).head;
      expect(text).toContain("end");
      expect(text).not.toContain("canary");
      expect(text).not.toMatch(/^(HARNESS_TEST_API_KEY|GITHUB_TOKEN)=/m);
    } finally {
      delete process.env.HARNESS_TEST_API_KEY;
      delete process.env.GITHUB_TOKEN;
    }
  });

  it("needs an on-disk workspace", async () => {
    const { tool, context } = setup({}, null);
    const error = await failureOf(tool.execute({ command: "true" }, context));
    expect(error.code).toBe("RUNTIME_EXCEPTION");
    expect(error.message).toContain("on-disk workspace");
  });

  it("kills the command when its spawn cannot be recorded", async () => {
    const token = uniqueSleep(100);
    let recorded: ShellSpawnInfo | undefined;
    const { tool, context } = setup({
      onSpawn: (info) => {
        recorded = info;
        throw new Error("journal unavailable");
      },
    });
    const error = await failureOf(tool.execute({ command: `sleep ${token} & sleep ${token}` }, context));
    expect(error.code).toBe("RUNTIME_EXCEPTION");
    expect(recorded).toBeDefined();
    expect(liveGroup(recorded!.pgid)).toEqual([]);
    expect(liveSleeps(token)).toEqual([]);
  });
});

describe("killSurvivors (resume after the harness process died)", () => {
  it("kills an unsandboxed group left behind by a SIGKILLed harness, and only that group", async () => {
    const token = uniqueSleep(300);
    const { script, argument } = await shellStandIn(dirs, `sleep ${token} & sleep ${token}; wait`, "none");
    const child = spawn(process.execPath, [script, argument], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let lines = "";
    child.stdout.on("data", (chunk: Buffer) => {
      lines += chunk.toString();
    });
    expect(await eventually(() => liveSleeps(token).length === 2, 20_000)).toBe(true);
    expect(await eventually(() => lines.includes('"spawned"'))).toBe(true);
    const spawnedLine = lines
      .split("\n")
      .filter((line) => line.includes('"spawned"'))
      .at(-1);
    const identity = JSON.parse(spawnedLine!) as ShellSpawnInfo;
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));

    // Without a sandbox nothing kills the orphans: the engine must, on resume.
    expect(liveSleeps(token)).toHaveLength(2);
    expect(await killSurvivors({ ...identity, startTicks: identity.startTicks + 1 })).toBe(0);
    expect(await killSurvivors({ ...identity, bootId: "another-boot" })).toBe(0);
    expect(liveSleeps(token)).toHaveLength(2);

    expect(await killSurvivors(identity, { graceMs: 500 })).toBe(3);
    expect(liveSleeps(token)).toEqual([]);
    expect(liveGroup(identity.pgid)).toEqual([]);
  });
});

describe("workspace effects", () => {
  it("writes files in the workspace without a sandbox", async () => {
    const { tool, context } = setup();
    await tool.execute({ command: "printf 'bytes' > out.txt" }, context);
    expect(readFileSync(path.join(dirs.workspace, "out.txt"), "utf8")).toBe("bytes");
  });
});
