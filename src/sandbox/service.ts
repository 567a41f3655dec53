import { type ChildProcess, spawn } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { groupEnded, groupStarted } from "../shared/process-groups.js";
import { type CaptureLimits, OutputCapture, type StreamSummary } from "./capture.js";
import { SpawnError } from "./process.js";
import type { ByteFilter } from "./scrub.js";
import {
  identifySpawn,
  type ProcessTree,
  processGroupTree,
  type SpawnIdentity,
  terminateTree,
} from "./tree.js";

/**
 * A long-lived process harness talks to over its pipes (an MCP stdio server), as opposed to a
 * command run to its end (process.ts). Same ownership rules: it leads its own process group (or
 * its bwrap pid namespace), and stopping it stops its whole tree. Every live service is also
 * killed when harness itself exits, so none outlives the session that started it.
 */

export interface StartServiceOptions {
  file: string;
  args: readonly string[];
  cwd: string;
  /** The complete environment of the process (nothing is inherited). */
  env: Record<string, string>;
  extraPipes?: number;
  createTree?: (child: ChildProcess) => ProcessTree;
  /** An IPC channel after the extra pipes, served by this (see Launch.channel). */
  channel?: (child: ChildProcess) => void;
  /** stderr is kept bounded (head and tail); it is diagnostics, never protocol. */
  stderrLimits?: CaptureLimits;
  /** Applied to stderr before it is kept (secret scrubbing). */
  stderrFilter?: ByteFilter;
  /** Run once the tree is gone (the service's egress proxy is closed after what used it). */
  afterStop?: () => Promise<void>;
}

export interface ServiceExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServiceProcess extends SpawnIdentity {
  readonly stdin: Writable;
  readonly stdout: Readable;
  /** Resolves once the main process has exited (the rest of its tree may still run). */
  readonly exited: Promise<ServiceExit>;
  /** Whether the main process has exited. */
  readonly hasExited: boolean;
  /** Pids of the tree's live processes. */
  members(): number[];
  /**
   * Watch stderr as it arrives (scrubbed, as it is kept): for a caller that must act on what the
   * process says before it exits (an MCP server that cannot download its package). Returns the
   * unsubscribe.
   */
  onStderr(listener: (bytes: Buffer) => void): () => void;
  /**
   * Stop the whole tree: SIGTERM, `graceMs`, SIGKILL. Idempotent. Resolves with the stderr
   * captured over the process's life, once the tree is gone.
   */
  stop(graceMs?: number): Promise<StreamSummary>;
}

const DEFAULT_STDERR_LIMITS: CaptureLimits = { headBytes: 4 * 1024, tailBytes: 4 * 1024 };
/** How long stop waits for stderr to close after the tree is gone (an escapee may hold it). */
const STDERR_DRAIN_MS = 500;

/** The trees of every running service, killed synchronously if harness exits first. */
const live = new Set<ProcessTree>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // `exit` handlers must be synchronous: SIGKILL is the only way to be sure in time.
  process.on("exit", () => {
    for (const tree of live) tree.kill();
  });
}

/**
 * Spawn a service. Rejects with SpawnError (nothing ran) when the executable cannot be started.
 * Callers reach it only through Executor.start, which filtered the environment and wrapped the
 * command in its sandbox.
 */
export async function startService(options: StartServiceOptions): Promise<ServiceProcess> {
  const child = spawn(options.file, options.args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: [
      "pipe",
      "pipe",
      "pipe",
      ...Array.from({ length: options.extraPipes ?? 0 }, () => "pipe" as const),
      ...(options.channel !== undefined ? ["ipc" as const] : []),
    ],
  });
  options.channel?.(child);
  let hasExited = false;
  const exited = new Promise<ServiceExit>((resolve) =>
    child.once("exit", (code, signal) => {
      hasExited = true;
      resolve({ code, signal });
    }),
  );
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", (error: NodeJS.ErrnoException) => reject(new SpawnError(error.code)));
  });
  child.on("error", () => undefined);
  // A server that exits while we write must not crash harness with EPIPE.
  child.stdin!.on("error", () => undefined);
  child.stdout!.on("error", () => undefined);
  const pid = child.pid!;
  const tree = options.createTree?.(child) ?? processGroupTree(pid);
  installExitHook();
  live.add(tree);
  groupStarted(pid);
  const stderrListeners = new Set<(bytes: Buffer) => void>();
  const stderr = new OutputCapture(
    options.stderrLimits ?? DEFAULT_STDERR_LIMITS,
    undefined,
    options.stderrFilter,
    (bytes) => {
      for (const listener of stderrListeners) listener(bytes);
    },
  );
  const reading = stderr.consume(child.stderr!);
  let stopping: Promise<StreamSummary> | undefined;
  const identity = identifySpawn(pid);
  return {
    ...identity,
    stdin: child.stdin!,
    stdout: child.stdout!,
    exited,
    get hasExited() {
      return hasExited;
    },
    members: () => tree.members(),
    onStderr(listener) {
      stderrListeners.add(listener);
      return () => stderrListeners.delete(listener);
    },
    stop(graceMs = 2_000) {
      stopping ??= (async () => {
        await terminateTree(tree, graceMs);
        live.delete(tree);
        groupEnded(pid);
        await Promise.race([reading, new Promise((resolve) => setTimeout(resolve, STDERR_DRAIN_MS))]);
        for (const stream of child.stdio) (stream as Readable | Writable | null)?.destroy();
        await options.afterStop?.().catch(() => undefined);
        return stderr.finish();
      })();
      return stopping;
    },
  };
}
