import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyNewEvent } from "../../../src/journal/vocabulary.js";
import { Executor } from "../../../src/sandbox/executor.js";
import { NoSandbox } from "../../../src/sandbox/none.js";
import { BackgroundProcesses } from "../../../src/tools/shell/background.js";

/*
 * Background processes on a pseudo-terminal without the sandbox (the sandboxed path runs in
 * test/e2e/background-pty.test.ts): typed input reaches the program, its output is scrubbed like
 * a pipe's, Ctrl-C typed as text interrupts it, and nothing is typed into a stopped process.
 */

const KEY = "sk-live-0123456789abcdef";
const executor = new Executor({ environment: { PATH: process.env.PATH, OPENAI_API_KEY: KEY } });
const profile = { sandbox: new NoSandbox(), env: {} };
const cleanup: string[] = [];
afterEach(async () => {
  for (const dir of cleanup.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function startOnTerminal(registry: BackgroundProcesses, callId: string, command: string, log: string) {
  const workspace = await mkdtemp(join(tmpdir(), "harness-pty-"));
  cleanup.push(workspace);
  const outcome = await registry.start({
    callId,
    command,
    keep: "turn",
    pty: true,
    ready: { log },
    readyTimeoutMs: 10_000,
    signal: new AbortController().signal,
    launch: (onOutput) =>
      executor.background({ argv: ["/bin/sh", "-c", command], workspace, profile, onOutput, pty: true }),
  });
  return { outcome, workspace };
}

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((resolve) => setTimeout(resolve, 25));
}

describe("a background process on a terminal (no sandbox)", () => {
  it("reads what is typed on a terminal, scrubs its output, and takes nothing once stopped", async () => {
    const events: AnyNewEvent[] = [];
    const registry = new BackgroundProcesses({ graceMs: 200 });
    await registry.attach(async (event) => {
      events.push(event);
    });
    const command = `[ -t 0 ] && echo "tty yes"; echo "key $OPENAI_API_KEY"; printf "name? "; read n; echo "hello $n" > answer.txt; sleep 30`;
    const { outcome, workspace } = await startOnTerminal(registry, "c1", command, "name\\?");
    expect(outcome).toMatchObject({ kind: "ready", by: "log" });
    expect(registry.input("bg-c1", "bob\n")).toBe("written");
    const answer = join(workspace, "answer.txt");
    await until(async () => (await readFile(answer, "utf8").catch(() => "")).length > 0);
    expect(await readFile(answer, "utf8")).toBe("hello bob\n");
    const text = registry.output("bg-c1", undefined, 10_000)!.text;
    expect(text).toContain("tty yes");
    expect(text).not.toContain(KEY);
    const stopped = await registry.stop("bg-c1", "stopped");
    expect(stopped).toMatchObject({ survivors: 0 });
    expect(registry.input("bg-c1", "more\n")).toBe("stopped");
    expect(registry.input("bg-none", "x")).toBeUndefined();
  }, 30_000);

  it("ends the foreground program when Ctrl-C is typed as text", async () => {
    const registry = new BackgroundProcesses({ graceMs: 200 });
    await registry.attach(async () => undefined);
    const { outcome } = await startOnTerminal(registry, "c2", "echo READY; exec sleep 30", "READY");
    expect(outcome).toMatchObject({ kind: "ready" });
    expect(registry.input("bg-c2", "\u0003")).toBe("written");
    await until(() => registry.info("bg-c2")?.status === "stopped");
    expect(registry.info("bg-c2")).toMatchObject({ status: "stopped", reason: "exited", signal: "SIGINT" });
  }, 30_000);
});
