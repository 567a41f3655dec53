import { spawn } from "node:child_process";
import { constants } from "node:os";
import { PassThrough, type Readable } from "node:stream";
import type { ArtifactStore } from "../artifacts/store.js";
import { groupEnded, groupStarted } from "../shared/process-groups.js";
import { type CaptureLimits, OutputCapture, type StreamSummary } from "./capture.js";
import { SpawnError } from "./process.js";
import type { Launch } from "./sandbox.js";
import type { ByteFilter } from "./scrub.js";
import { identifySpawn, processGroupTree, type SpawnIdentity, terminateTree } from "./tree.js";

/**
 * A process that runs beside the session instead of to the end of its call (a dev server, a
 * watcher): a `shell` call with `background: true`. Same ownership as any command (process.ts):
 * it leads its own process group, or its bwrap pid namespace, and stopping it stops the whole
 * tree. Its output is scrubbed, streamed to artifacts and shown to the caller as it arrives; every
 * live one is killed synchronously when harness exits.
 */

export interface StartBackgroundOptions extends Launch {
  /** A fresh filter per output stream (secret scrubbing), applied before anyone sees a byte. */
  outputFilter: () => ByteFilter;
  /** Each stream's scrubbed bytes as they arrive; must not throw. */
  onOutput: (stream: "stdout" | "stderr", bytes: Buffer) => void;
  artifacts?: ArtifactStore;
  capture?: CaptureLimits;
  /** Run it on a pseudo-terminal (its output on stdout; `write` types into it). */
  pty?: boolean;
}

export interface BackgroundExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** What stopping a background process found. */
export interface BackgroundStop extends BackgroundExit {
  /** Processes of its tree alive when it was stopped (its own included). */
  killed: number;
  /** Processes of its tree still alive after SIGKILL had time to act: should be 0. */
  survivors: number;
  stdout: StreamSummary;
  stderr: StreamSummary;
}

export interface BackgroundProcess extends SpawnIdentity {
  /** Resolves once the main process has exited (the rest of its tree may still run). */
  readonly exited: Promise<BackgroundExit>;
  readonly hasExited: boolean;
  /** Whether it runs on a pseudo-terminal. */
  readonly terminal: boolean;
  /** Type into its terminal. False when it has none or has exited (nothing was written). */
  write(text: string): boolean;
  /** Host pids of the tree's live processes (sandbox machinery excluded). */
  members(): number[];
  /** Stop the whole tree: SIGTERM, `graceMs`, SIGKILL; then count what is left. Idempotent. */
  stop(graceMs?: number): Promise<BackgroundStop>;
}

/** Killed at once if harness exits while they run: `exit` handlers must be synchronous. */
const live = new Set<{ kill(): void }>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const tree of live) tree.kill();
  });
}

/** How long stop waits for the pipes to close once the tree is gone. */
const DRAIN_MS = 500;

/** Spawn a background process from a launch the executor prepared. Rejects with SpawnError when nothing ran. */
export async function startBackground(options: StartBackgroundOptions): Promise<BackgroundProcess> {
  const capture = options.capture ?? { headBytes: 8 * 1024, tailBytes: 8 * 1024 };
  const streams = (["stdout", "stderr"] as const).map(
    (name) =>
      new OutputCapture(capture, options.artifacts, options.outputFilter(), (bytes) =>
        options.onOutput(name, bytes),
      ),
  ) as [OutputCapture, OutputCapture];
  if (options.pty === true) return startOnTerminal(options, streams);
  const child = spawn(options.file, options.args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: [
      "ignore",
      "pipe",
      "pipe",
      ...Array.from({ length: options.extraPipes }, () => "pipe" as const),
      ...(options.channel !== undefined ? ["ipc" as const] : []),
    ],
  });
  options.channel?.(child);
  let hasExited = false;
  const exited = new Promise<BackgroundExit>((resolve) =>
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
  const pid = child.pid!;
  const tree = options.createTree?.(child) ?? processGroupTree(pid);
  installExitHook();
  live.add(tree);
  groupStarted(pid);
  const reading = Promise.all([streams[0].consume(child.stdout!), streams[1].consume(child.stderr!)]);
  let stopping: Promise<BackgroundStop> | undefined;
  return {
    ...identifySpawn(pid),
    exited,
    get hasExited() {
      return hasExited;
    },
    terminal: false,
    write: () => false,
    members: () => tree.members(),
    stop(graceMs = 2_000) {
      stopping ??= (async () => {
        const killed = await terminateTree(tree, graceMs);
        const survivors = tree.members().length;
        live.delete(tree);
        groupEnded(pid);
        const exit = await Promise.race([exited, delay(2_000).then(() => undefined)]);
        await Promise.race([reading, delay(DRAIN_MS)]);
        for (const stream of child.stdio) (stream as Readable | null)?.destroy();
        await reading;
        const [stdout, stderr] = await Promise.all([streams[0].finish(), streams[1].finish()]);
        return {
          code: exit?.code ?? null,
          signal: exit?.signal ?? null,
          killed,
          survivors,
          stdout,
          stderr,
        };
      })();
      return stopping;
    },
  };
}

/** Rows and columns of the terminal a process gets. */
const TERMINAL_SIZE = { cols: 120, rows: 40 };

/**
 * The same start on a pseudo-terminal: the launch (bwrap included) is the terminal's child, in a
 * session of its own, so its process group, or the namespace bwrap reports, is the tree. The
 * terminal merges stdout and stderr; its output goes to the stdout capture.
 */
async function startOnTerminal(
  options: StartBackgroundOptions,
  [stdout, stderr]: [OutputCapture, OutputCapture],
): Promise<BackgroundProcess> {
  let pty: typeof import("@lydell/node-pty");
  try {
    pty = await import("@lydell/node-pty");
  } catch {
    throw new SpawnError("ENOPTY");
  }
  const launch = options.onTerminal?.();
  let terminal: import("@lydell/node-pty").IPty;
  try {
    terminal = pty.spawn(launch?.file ?? options.file, launch?.args ?? options.args, {
      name: "xterm-256color",
      ...TERMINAL_SIZE,
      cwd: options.cwd,
      env: options.env,
    });
  } catch (error) {
    throw new SpawnError((error as NodeJS.ErrnoException).code);
  }
  const output = new PassThrough();
  terminal.onData((text) => {
    if (!output.writableEnded) output.write(Buffer.from(text, "utf8"));
  });
  let hasExited = false;
  const exited = new Promise<BackgroundExit>((resolve) =>
    terminal.onExit(({ exitCode, signal }) => {
      hasExited = true;
      output.end();
      resolve(
        signal !== undefined && signal > 0
          ? { code: null, signal: signalName(signal) }
          : { code: exitCode, signal: null },
      );
    }),
  );
  const pid = terminal.pid;
  const tree = launch?.createTree(pid, exited) ?? processGroupTree(pid);
  installExitHook();
  live.add(tree);
  groupStarted(pid);
  const empty = new PassThrough();
  empty.end();
  const reading = Promise.all([stdout.consume(output), stderr.consume(empty)]);
  let stopping: Promise<BackgroundStop> | undefined;
  return {
    ...identifySpawn(pid),
    exited,
    get hasExited() {
      return hasExited;
    },
    terminal: true,
    write: (text) => {
      if (hasExited) return false;
      terminal.write(text);
      return true;
    },
    members: () => tree.members(),
    stop(graceMs = 2_000) {
      stopping ??= (async () => {
        const killed = await terminateTree(tree, graceMs);
        const survivors = tree.members().length;
        live.delete(tree);
        groupEnded(pid);
        const exit = await Promise.race([exited, delay(2_000).then(() => undefined)]);
        await Promise.race([reading, delay(DRAIN_MS)]);
        output.end();
        await reading;
        const [out, err] = await Promise.all([stdout.finish(), stderr.finish()]);
        return {
          code: exit?.code ?? null,
          signal: exit?.signal ?? null,
          killed,
          survivors,
          stdout: out,
          stderr: err,
        };
      })();
      return stopping;
    },
  };
}

function signalName(signal: number): NodeJS.Signals | null {
  const found = Object.entries(constants.signals).find(([, number]) => number === signal);
  return (found?.[0] as NodeJS.Signals | undefined) ?? null;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
