import { appendFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { ToolError } from "../../src/tools/errors.js";
import { type AnyTool, defineTool, type Idempotency } from "../../src/tools/tool.js";

/**
 * Test tools whose effects can be counted from outside: every handler run is logged in a
 * `ToolLab`, so a test can prove that a handler ran (or never ran), how often, and when.
 */

export interface Execution {
  tool: string;
  callId: string;
  startedAt: number;
  endedAt?: number;
}

/** Shared bookkeeping of one test's tool executions. */
export class ToolLab {
  readonly executions: Execution[] = [];
  /** Called when a handler begins, e.g. to abort the run while it is running. */
  onStart: ((execution: Execution) => void) | undefined;
  private readonly failures = new Map<string, number>();

  begin(tool: string, callId: string): Execution {
    const execution: Execution = { tool, callId, startedAt: Date.now() };
    this.executions.push(execution);
    this.onStart?.(execution);
    return execution;
  }

  /** How many times handlers of `tool` (or of any tool) ran. */
  runs(tool?: string): number {
    return this.executions.filter((e) => tool === undefined || e.tool === tool).length;
  }

  /** True (and counts) while fewer than `times` failures were injected for `key`. */
  shouldFail(key: string, times: number): boolean {
    const done = this.failures.get(key) ?? 0;
    if (done >= times) return false;
    this.failures.set(key, done + 1);
    return true;
  }
}

const none = { read: [] as string[], write: [] as string[] };

/** Sleeps `ms`, honouring its signal: an abort rejects at once. Concurrency-safe. */
export function waitTool(lab: ToolLab, options: { name?: string; timeoutMs?: number } = {}): AnyTool {
  const name = options.name ?? "wait";
  return defineTool({
    name,
    description: "Wait for the given number of milliseconds, then report it (test tool).",
    version: "1",
    input: z.strictObject({ ms: z.number().int().nonnegative() }),
    effect: "read_only",
    idempotency: "pure",
    timeoutMs: options.timeoutMs ?? 30_000,
    resources: () => none,
    concurrencySafe: () => true,
    async execute(args, context) {
      const execution = lab.begin(name, context.callId);
      await abortableSleep(args.ms, context.signal);
      execution.endedAt = Date.now();
      return { summary: `waited ${args.ms} ms`, content: `waited ${args.ms} ms` };
    },
  });
}

/** Sleeps `ms` and never looks at its signal: the runtime must abandon it. */
export function slowIgnoringTool(lab: ToolLab, options: { timeoutMs: number }): AnyTool {
  return defineTool({
    name: "slow_ignoring",
    description: "Wait for the given number of milliseconds, ignoring cancellation (test tool).",
    version: "1",
    input: z.strictObject({ ms: z.number().int().nonnegative() }),
    effect: "read_only",
    idempotency: "pure",
    timeoutMs: options.timeoutMs,
    resources: () => none,
    concurrencySafe: () => true,
    async execute(args, context) {
      const execution = lab.begin("slow_ignoring", context.callId);
      await new Promise((resolve) => setTimeout(resolve, args.ms));
      execution.endedAt = Date.now();
      return { summary: "finished late", content: "finished late" };
    },
  });
}

/**
 * Throws a transient IO_ERROR for the first `failures` executions with the same `key`, then
 * succeeds. Its idempotency decides whether the runtime may retry it.
 */
export function flakyTool(lab: ToolLab, options: { name: string; idempotency: Idempotency }): AnyTool {
  return defineTool({
    name: options.name,
    description: "Fail with a transient IO error a given number of times, then succeed (test tool).",
    version: "1",
    input: z.strictObject({ key: z.string(), failures: z.number().int().nonnegative() }),
    effect: options.idempotency === "non_idempotent" ? "local_write" : "read_only",
    idempotency: options.idempotency,
    timeoutMs: 5_000,
    resources: (args) => ({ read: [`flaky:${args.key}`], write: [] }),
    concurrencySafe: () => true,
    async execute(args, context) {
      const execution = lab.begin(options.name, context.callId);
      execution.endedAt = Date.now();
      if (lab.shouldFail(args.key, args.failures)) {
        throw new ToolError("IO_ERROR", "the disk hiccuped (injected)");
      }
      return { summary: "succeeded", content: "succeeded" };
    },
  });
}

/**
 * Appends one line to a workspace file per execution, so a double execution is visible in the
 * file's bytes. Not idempotent, not concurrency-safe.
 */
export function touchTool(lab: ToolLab): AnyTool {
  return defineTool({
    name: "touch",
    description: "Append one line naming this call to a workspace file (test tool).",
    version: "1",
    input: z.strictObject({ path: z.string().min(1) }),
    effect: "local_write",
    idempotency: "non_idempotent",
    timeoutMs: 5_000,
    resources: (args) => ({ read: [], write: [`file:${args.path}`] }),
    concurrencySafe: () => false,
    async execute(args, context) {
      const execution = lab.begin("touch", context.callId);
      if (context.hostRoot === undefined) throw new ToolError("RUNTIME_EXCEPTION", "needs a disk workspace");
      await appendFile(join(context.hostRoot, args.path), `${context.callId}\n`);
      execution.endedAt = Date.now();
      return { summary: `appended to ${args.path}`, content: `appended to ${args.path}` };
    },
  });
}

/** Returns `bytes` bytes of numbered log lines. */
export function bigTool(lab: ToolLab): AnyTool {
  return defineTool({
    name: "big",
    description: "Produce a long build log of the requested size (test tool).",
    version: "1",
    input: z.strictObject({ bytes: z.number().int().positive() }),
    effect: "read_only",
    idempotency: "pure",
    timeoutMs: 5_000,
    resources: () => none,
    concurrencySafe: () => true,
    async execute(args, context) {
      const execution = lab.begin("big", context.callId);
      const content = buildLog(args.bytes);
      execution.endedAt = Date.now();
      return { summary: `built a ${args.bytes}-byte log`, content };
    },
  });
}

/** Deterministic ASCII log text of exactly `bytes` bytes. */
export function buildLog(bytes: number): string {
  let text = "";
  for (let line = 1; text.length < bytes; line++)
    text += `[build] step ${line}: compiled module_${line}.ts\n`;
  return text.slice(0, bytes);
}

/** A read of a line range whose semantic validation refuses start_line > end_line. */
export function readLinesTool(lab: ToolLab): AnyTool {
  return defineTool({
    name: "read_lines",
    description: "Read lines start_line..end_line of a file (test tool with semantic validation).",
    version: "1",
    input: z.strictObject({
      path: z.string().min(1),
      start_line: z.number().int().min(1),
      end_line: z.number().int().min(1),
    }),
    effect: "read_only",
    idempotency: "idempotent",
    timeoutMs: 5_000,
    resources: (args) => ({ read: [`file:${args.path}`], write: [] }),
    concurrencySafe: () => true,
    validate(args) {
      if (args.start_line > args.end_line) {
        throw new ToolError(
          "SEMANTIC_VALIDATION_ERROR",
          `start_line ${args.start_line} is after end_line ${args.end_line}`,
          { data: { start_line: args.start_line, end_line: args.end_line } },
        );
      }
    },
    async execute(args, context) {
      lab.begin("read_lines", context.callId);
      return { summary: "read", content: `${args.path}:${args.start_line}-${args.end_line}` };
    },
  });
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error("aborted"));
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error("aborted"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
