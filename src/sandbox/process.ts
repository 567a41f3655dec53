import { type ChildProcess, spawn } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import type { ArtifactStore } from "../artifacts/store.js";
import { groupEnded, groupStarted } from "../shared/process-groups.js";
import { traceMark } from "../shared/trace-startup.js";
import { type CaptureLimits, DEFAULT_CAPTURE_LIMITS, OutputCapture, type StreamSummary } from "./capture.js";
import type { ByteFilter } from "./scrub.js";
import {
  identifySpawn,
  type ProcessTree,
  processGroupTree,
  type SpawnIdentity,
  terminateTree,
} from "./tree.js";

export interface RunProcessOptions {
  /** Executable (absolute path, or a name looked up in `env.PATH`). */
  file: string;
  args: readonly string[];
  cwd: string;
  /** The complete environment of the process (nothing is inherited). */
  env: Record<string, string>;
  timeoutMs: number;
  /** Aborting it cancels the run: the whole tree is terminated. */
  signal?: AbortSignal;
  /** Time between SIGTERM and SIGKILL. Default 2000 ms. */
  killGraceMs?: number;
  /**
   * How long to wait for stdout/stderr to close once the tree was killed: a process that left the
   * tree (e.g. `setsid` without a sandbox) may hold the pipes open forever. Default 500 ms.
   */
  drainMs?: number;
  capture?: CaptureLimits;
  /** Where the full output bytes go; without it, only the bounded preview is kept. */
  artifacts?: ArtifactStore;
  /** Extra pipes after stdin/stdout/stderr (fd 3, 4, ...), e.g. for bwrap's --info-fd. */
  extraPipes?: number;
  /** How to find and kill the command's processes; default: its process group. */
  createTree?: (child: ChildProcess) => ProcessTree;
  /** An IPC channel after the extra pipes, served by this (see Launch.channel). */
  channel?: (child: ChildProcess) => void;
  /**
   * Called once the process exists, before waiting on it, so the caller can record the group
   * (see killSurvivors). If it throws, the tree is killed and runProcess rejects.
   */
  onSpawn?: (identity: SpawnIdentity) => void | Promise<void>;
  /** Written to the process's stdin, which is then closed. Without it, stdin is /dev/null. */
  stdin?: string;
  /** A fresh filter per output stream (secret scrubbing), applied before previews and artifacts. */
  outputFilter?: () => ByteFilter;
  /** Sees each stream's bytes as they arrive, after the filter; must not throw or block. */
  onOutput?: (stream: "stdout" | "stderr", bytes: Buffer) => void;
}

export type ProcessOutcome = "exited" | "timeout" | "cancelled";

export interface ProcessResult {
  /** Why the run ended: the command exited by itself, ran out of time, or was cancelled. */
  outcome: ProcessOutcome;
  exitCode: number | null;
  /** The signal that ended the main process, if any. */
  exitSignal: NodeJS.Signals | null;
  durationMs: number;
  stdout: StreamSummary;
  stderr: StreamSummary;
  /** Processes of the tree that were still alive when it was terminated. */
  killedProcesses: number;
}

/** The executable could not be started at all (nothing ran). */
export class SpawnError extends Error {
  override readonly name = "SpawnError";
  /** The errno code of the failed spawn (ENOENT, EACCES…), when there is one. */
  constructor(readonly code: string | undefined) {
    super(`the process could not be started${code === undefined ? "" : ` (${code})`}`);
  }
}

const EXIT_SETTLE_MS = 5_000;

/**
 * Run one process as the leader of its own process group, stream its output into bounded
 * captures and artifacts, and make sure that when it ends — by itself, by timeout or by
 * cancellation — every process of its tree is gone before this resolves. stdin is /dev/null
 * unless `stdin` is given.
 *
 * Resolves for every outcome of a started process; rejects only with SpawnError (nothing ran)
 * or when onSpawn throws (the tree was killed first).
 */
export async function runProcess(options: RunProcessOptions): Promise<ProcessResult> {
  const limits = options.capture ?? DEFAULT_CAPTURE_LIMITS;
  const watch = options.onOutput;
  const stdout = new OutputCapture(
    limits,
    options.artifacts,
    options.outputFilter?.(),
    watch && ((bytes) => watch("stdout", bytes)),
  );
  const stderr = new OutputCapture(
    limits,
    options.artifacts,
    options.outputFilter?.(),
    watch && ((bytes) => watch("stderr", bytes)),
  );
  const started = performance.now();
  if (options.signal?.aborted) {
    return {
      outcome: "cancelled",
      exitCode: null,
      exitSignal: null,
      durationMs: 0,
      stdout: await stdout.finish(),
      stderr: await stderr.finish(),
      killedProcesses: 0,
    };
  }

  traceMark(`process: spawning ${options.file}`);
  // The one spawn of a command in harness: callers reach it only through Executor.execute, which
  // has already filtered the environment and wrapped the command in its sandbox.
  const child = spawn(options.file, options.args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: [
      options.stdin === undefined ? "ignore" : "pipe",
      "pipe",
      "pipe",
      ...Array.from({ length: options.extraPipes ?? 0 }, () => "pipe" as const),
      ...(options.channel !== undefined ? ["ipc" as const] : []),
    ],
  });
  options.channel?.(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", (error: NodeJS.ErrnoException) => reject(new SpawnError(error.code)));
  });
  // Later errors (none are expected once spawned) must not crash the harness process.
  child.on("error", () => undefined);
  if (options.stdin !== undefined) writeInput(child.stdin!, options.stdin);
  const pid = child.pid!;
  groupStarted(pid);
  const tree = options.createTree?.(child) ?? processGroupTree(pid);
  const graceMs = options.killGraceMs ?? 2_000;
  const reading = Promise.all([stdout.consume(child.stdout!), stderr.consume(child.stderr!)]);

  if (options.onSpawn !== undefined) {
    try {
      await options.onSpawn(identifySpawn(pid));
    } catch (error) {
      await terminateTree(tree, 0);
      await Promise.all([stdout.abort(), stderr.abort()]);
      destroyPipes(child);
      throw error;
    }
  }

  const outcome = await waitForEnd(exited, options.timeoutMs, options.signal);
  traceMark(`process: ${options.file} ${outcome}`);
  // Also after a normal exit: background children (`cmd &`, nohup) must not outlive the call.
  const killedProcesses = await terminateTree(tree, graceMs);
  groupEnded(pid);
  traceMark("process: tree terminated");
  const exit = (await within(exited, EXIT_SETTLE_MS))?.value;
  if ((await within(reading, options.drainMs ?? 500)) === undefined) {
    destroyPipes(child);
    await reading;
  }
  destroyPipes(child);
  return {
    outcome,
    exitCode: exit?.code ?? null,
    exitSignal: exit?.signal ?? null,
    durationMs: Math.round(performance.now() - started),
    stdout: await stdout.finish(),
    stderr: await stderr.finish(),
    killedProcesses,
  };
}

function waitForEnd(
  exited: Promise<unknown>,
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<ProcessOutcome> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish("timeout"), timeoutMs);
    const onAbort = () => finish("cancelled");
    signal?.addEventListener("abort", onAbort, { once: true });
    void exited.then(() => finish("exited"));
    // An abort during onSpawn happened before the listener existed.
    if (signal?.aborted) finish("cancelled");
    function finish(outcome: ProcessOutcome): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(outcome);
    }
  });
}

/** The promise's value if it settles within `ms`, else undefined. */
async function within<T>(promise: Promise<T>, ms: number): Promise<{ value: T } | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise.then((value) => ({ value })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function writeInput(stdin: Writable, text: string): void {
  // The process may exit without reading its input (EPIPE); its exit status still decides.
  stdin.on("error", () => undefined);
  stdin.end(text);
}

function destroyPipes(child: ChildProcess): void {
  for (const stream of child.stdio) (stream as Readable | null)?.destroy();
}
