import { existsSync } from "node:fs";
import type { AnyNewEvent, EventData } from "../../journal/vocabulary.js";
import type { BackgroundStop } from "../../sandbox/background.js";
import type { StartedBackground } from "../../sandbox/executor.js";
import { listensOn } from "../../sandbox/listening.js";
import { OutputRing } from "./output-ring.js";

/**
 * The session's background processes (`shell` with `background: true`): the one place that knows
 * which run, whose call started each, how long each may live, and what each printed lately. A
 * process is stopped, with its whole tree, at its TTL, at the end of the turn unless it is kept
 * for the session, on interrupt, when the session closes and when harness exits (the sandbox's
 * exit hook). Each start, readiness and stop becomes a journal record through the engine's sink;
 * between turns (a TTL that fires while nobody runs) records wait for the next one.
 */

export type Keep = "turn" | "session";
export type StopReason = EventData<"process.stopped">["reason"];
export type Readiness =
  | { port: number; timeout_ms?: number | undefined }
  | { log: string; timeout_ms?: number | undefined };

/** A process as `process_list` shows it. */
export interface ProcessInfo {
  process_id: string;
  call_id: string;
  command: string;
  keep: Keep;
  pty: boolean;
  status: "running" | "stopped";
  started_ms_ago: number;
  /** The output cursor: bytes seen so far. */
  output_bytes: number;
  ttl_ms?: number;
  exit?: number | null;
  signal?: string | null;
  reason?: StopReason;
}

export interface BackgroundStart {
  callId: string;
  command: string;
  keep: Keep;
  ttlMs?: number;
  pty: boolean;
  ready?: Readiness;
  /** How long readiness may take (the `ready` condition's own timeout_ms wins). */
  readyTimeoutMs: number;
  signal: AbortSignal;
  /** Start the process through the executor, its output going to `onOutput`. */
  /** Start the process through the executor (on a terminal when `pty`), its output going to `onOutput`. */
  launch(onOutput: (stream: "stdout" | "stderr", bytes: Buffer) => void): Promise<StartedBackground>;
}

export type StartOutcome =
  | { kind: "ready"; id: string; by: "none" | "port" | "log"; afterMs: number; output: string }
  | {
      kind: "exited" | "timeout" | "cancelled";
      id: string;
      output: string;
      stopped: EventData<"process.stopped">;
    };

interface Entry {
  id: string;
  callId: string;
  command: string;
  keep: Keep;
  ttlMs?: number;
  pty: boolean;
  started: StartedBackground;
  startedAt: number;
  ring: OutputRing;
  /** Set once it stopped (the record written or held). */
  stopped?: EventData<"process.stopped">;
  stopping?: Promise<EventData<"process.stopped">>;
  ttl?: NodeJS.Timeout;
  /** Its workspace changes were not yet compared since it last ran. */
  effectsPending: boolean;
  /** A process of its tree whose /proc/PID/net shows its network namespace (a `{port}` probe). */
  probePid?: number | undefined;
}

export interface BackgroundOptions {
  /** Between SIGTERM and SIGKILL. Default 2000 ms. */
  graceMs?: number;
  /** Bytes of recent output held per process. Default 256 KiB. */
  ringBytes?: number;
  /** How often a `{port}` condition is looked at. Default 25 ms. */
  pollMs?: number;
}

/** Bytes of output a failure or a start shows. */
const TAIL_BYTES = 4 * 1024;

export class BackgroundProcesses {
  readonly #entries = new Map<string, Entry>();
  #sink: ((event: AnyNewEvent) => Promise<void>) | undefined;
  readonly #held: AnyNewEvent[] = [];
  readonly #graceMs: number;
  readonly #ringBytes: number;
  readonly #pollMs: number;
  /** Stop notices for whoever watches (a TTL that fired between turns, for the next one to tell). */
  #onStopped: ((data: EventData<"process.stopped">) => void) | undefined;

  constructor(options: BackgroundOptions = {}) {
    this.#graceMs = options.graceMs ?? 2_000;
    this.#ringBytes = options.ringBytes ?? 256 * 1024;
    this.#pollMs = options.pollMs ?? 25;
  }

  /** Records go to `sink` from now on; those held meanwhile are written first. */
  async attach(sink: (event: AnyNewEvent) => Promise<void>): Promise<void> {
    this.#sink = sink;
    for (const event of this.#held.splice(0)) await sink(event);
  }

  /** Nobody records any more (the engine's run ended): records are held. */
  detach(): void {
    this.#sink = undefined;
  }

  /** Called after a process stopped (the engine compares the workspace for it). */
  onStopped(listener: ((data: EventData<"process.stopped">) => void) | undefined): void {
    this.#onStopped = listener;
  }

  /** Whether this harness process started `id` (and so knows its fate). */
  has(id: string): boolean {
    return this.#entries.has(id);
  }

  /** The process id a call's background process gets. */
  static idFor(callId: string): string {
    return `bg-${callId}`;
  }

  list(): ProcessInfo[] {
    return [...this.#entries.values()].map((entry) => this.#info(entry));
  }

  info(id: string): ProcessInfo | undefined {
    const entry = this.#entries.get(id);
    return entry && this.#info(entry);
  }

  /** New output since `since` (bounded by `limit` bytes), and the cursor to ask from next. */
  output(
    id: string,
    since: number | undefined,
    limit: number,
  ): ({ text: string; next: number; missed: number } & { info: ProcessInfo }) | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    return { ...entry.ring.read(since, limit), info: this.#info(entry) };
  }

  /**
   * Type `text` into a process's terminal: "written", or why nothing was ("not_pty": it has no
   * terminal; "stopped": it no longer runs). Undefined for an id never started here.
   */
  input(id: string, text: string): "written" | "not_pty" | "stopped" | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    if (!entry.pty || !entry.started.process.terminal) return "not_pty";
    if (entry.stopped || entry.stopping) return "stopped";
    return entry.started.process.write(text) ? "written" : "stopped";
  }

  /**
   * The call that started the process whose workspace changes are not yet compared (the oldest
   * running, or stopped since the last comparison): what the workspace comparison attributes
   * changes no call made to. Undefined when none runs.
   */
  effectsOwner(): string | undefined {
    for (const entry of this.#entries.values()) if (entry.effectsPending) return entry.callId;
    return undefined;
  }

  /** The workspace was compared: stopped processes need no comparison any more. */
  effectsCompared(): void {
    for (const entry of this.#entries.values()) if (entry.stopped) entry.effectsPending = false;
  }

  /**
   * Start a process and wait until it is ready (its condition met), has exited, or the condition
   * timed out or the call was cancelled; in those three cases it is stopped (journaled) and the
   * outcome says why, with its output's tail. Rejects only when nothing started (or its start
   * could not be journaled: then it is stopped first).
   */
  async start(spec: BackgroundStart): Promise<StartOutcome> {
    const id = BackgroundProcesses.idFor(spec.callId);
    const ring = new OutputRing(this.#ringBytes);
    const listeners = new Set<() => void>();
    const started = await spec.launch((_stream, bytes) => {
      ring.write(bytes);
      for (const listener of listeners) listener();
    });
    const entry: Entry = {
      id,
      callId: spec.callId,
      command: spec.command,
      keep: spec.keep,
      pty: spec.pty,
      started,
      startedAt: Date.now(),
      ring,
      effectsPending: true,
    };
    if (spec.ttlMs !== undefined) entry.ttlMs = spec.ttlMs;
    this.#entries.set(id, entry);
    const { process } = started;
    try {
      await this.#emit({
        type: "process.started",
        data: {
          process_id: id,
          call_id: spec.callId,
          command: spec.command,
          keep: spec.keep,
          ...(spec.ttlMs !== undefined ? { ttl_ms: spec.ttlMs } : {}),
          pty: spec.pty,
          pid: process.pid,
          pgid: process.pgid,
          boot_id: process.bootId,
          start_ticks: process.startTicks,
          sandboxed: started.sandboxed,
          ...started.facts,
        },
      });
    } catch (error) {
      await started.stop(0);
      this.#entries.delete(id);
      throw error;
    }
    const outcome = await this.#awaitReady(entry, spec, listeners);
    if (outcome.kind !== "ready") {
      const reason: StopReason = outcome.kind === "cancelled" ? "interrupt" : "not_ready";
      const stopped = await this.stop(id, reason);
      return { kind: outcome.kind, id, output: ring.tail(TAIL_BYTES), stopped: stopped! };
    }
    await this.#emit({
      type: "process.ready",
      data: { process_id: id, by: outcome.by, after_ms: outcome.afterMs },
    });
    // From now on it ends by its TTL, a stop, or its own exit, whichever comes first.
    if (spec.ttlMs !== undefined) {
      entry.ttl = setTimeout(() => void this.stop(id, "ttl").catch(() => undefined), spec.ttlMs);
      entry.ttl.unref();
    }
    void process.exited.then(() => this.stop(id, "exited").catch(() => undefined));
    return { kind: "ready", id, by: outcome.by, afterMs: outcome.afterMs, output: ring.tail(TAIL_BYTES) };
  }

  async #awaitReady(
    entry: Entry,
    spec: BackgroundStart,
    listeners: Set<() => void>,
  ): Promise<
    | { kind: "ready"; by: "none" | "port" | "log"; afterMs: number }
    | { kind: "exited" | "timeout" | "cancelled" }
  > {
    const began = performance.now();
    const { process } = entry.started;
    const ready = spec.ready;
    const by = ready === undefined ? "none" : "port" in ready ? "port" : "log";
    if (ready === undefined) {
      return process.hasExited ? { kind: "exited" } : { kind: "ready", by, afterMs: 0 };
    }
    const timeoutMs = ready.timeout_ms ?? spec.readyTimeoutMs;
    return new Promise((resolve) => {
      let done = false;
      const cleanups: (() => void)[] = [];
      const finish = (
        result:
          | { kind: "ready"; by: "none" | "port" | "log"; afterMs: number }
          | { kind: "exited" | "timeout" | "cancelled" },
      ) => {
        if (done) return;
        done = true;
        for (const cleanup of cleanups) cleanup();
        resolve(result);
      };
      const isReady = () => finish({ kind: "ready", by, afterMs: Math.round(performance.now() - began) });
      const timer = setTimeout(() => finish({ kind: "timeout" }), timeoutMs);
      cleanups.push(() => clearTimeout(timer));
      const onAbort = () => finish({ kind: "cancelled" });
      spec.signal.addEventListener("abort", onAbort, { once: true });
      cleanups.push(() => spec.signal.removeEventListener("abort", onAbort));
      if (spec.signal.aborted) onAbort();
      // An exit settles it, unless the condition was met by the last output it wrote.
      void process.exited.then(() => setTimeout(() => finish({ kind: "exited" }), 20));
      if ("log" in ready) {
        const pattern = new RegExp(ready.log, "m");
        // The pattern is looked for in what arrived since the last look plus a margin before it,
        // so a line split across two reads still matches and the work per read stays bounded.
        let seen = 0;
        const look = () => {
          const from = Math.max(0, seen - 4096);
          seen = entry.ring.total;
          if (pattern.test(entry.ring.read(from, Number.MAX_SAFE_INTEGER).text)) isReady();
        };
        listeners.add(look);
        cleanups.push(() => listeners.delete(look));
        look();
      } else {
        const port = ready.port;
        const poll = () => {
          if (listensOn(this.#probePids(entry), port)) isReady();
        };
        const interval = setInterval(poll, this.#pollMs);
        cleanups.push(() => clearInterval(interval));
        poll();
      }
    });
  }

  /**
   * Processes whose network namespace is the command's: its tree's members, else its leader. The
   * tree is found by a walk of /proc, so the first member found is kept while it lives.
   */
  #probePids(entry: Entry): number[] {
    if (entry.probePid !== undefined && existsSync(`/proc/${entry.probePid}`)) return [entry.probePid];
    const members = entry.started.process.members();
    entry.probePid = members[0];
    return members.length > 0 ? members : entry.started.sandboxed ? [] : [entry.started.process.pid];
  }

  /**
   * Stop a process and its tree (idempotent: a second stop waits for the first) and journal
   * `process.stopped`. Undefined for an id never started here.
   */
  async stop(id: string, reason: StopReason): Promise<EventData<"process.stopped"> | undefined> {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.stopped) return entry.stopped;
    entry.stopping ??= (async () => {
      if (entry.ttl) clearTimeout(entry.ttl);
      // A process that exited by itself keeps that reason even when a stop races it.
      const why: StopReason = entry.started.process.hasExited && reason !== "not_ready" ? "exited" : reason;
      const result: BackgroundStop = await entry.started.stop(this.#graceMs);
      const data: EventData<"process.stopped"> = {
        process_id: id,
        exit: result.code,
        signal: result.signal,
        survivors: result.survivors,
        killed: result.killed,
        reason: why,
        output_bytes: entry.ring.total,
        stdout: result.stdout.artifact,
        stderr: result.stderr.artifact,
      };
      entry.stopped = data;
      await this.#emit({ type: "process.stopped", data });
      this.#onStopped?.(data);
      return data;
    })();
    return entry.stopping;
  }

  /**
   * The turn ended: processes kept for the turn are stopped, every one when it was interrupted.
   * Resolves once they are gone and journaled.
   */
  async endTurn(interrupted: boolean): Promise<EventData<"process.stopped">[]> {
    const ending = [...this.#entries.values()].filter(
      (entry) => !entry.stopped && (interrupted || entry.keep === "turn"),
    );
    const stopped = await Promise.all(
      ending.map((entry) => this.stop(entry.id, interrupted ? "interrupt" : "turn_end")),
    );
    return stopped.filter((data) => data !== undefined);
  }

  /** The session ends: every process is stopped. */
  async closeSession(): Promise<void> {
    await Promise.all(
      [...this.#entries.values()]
        .filter((entry) => !entry.stopped)
        .map((entry) => this.stop(entry.id, "session_end")),
    );
  }

  /** Whether any process still runs. */
  get running(): number {
    return [...this.#entries.values()].filter((entry) => !entry.stopped).length;
  }

  async #emit(event: AnyNewEvent): Promise<void> {
    if (this.#sink) await this.#sink(event);
    else this.#held.push(event);
  }

  #info(entry: Entry): ProcessInfo {
    const info: ProcessInfo = {
      process_id: entry.id,
      call_id: entry.callId,
      command: entry.command,
      keep: entry.keep,
      pty: entry.pty,
      status: entry.stopped ? "stopped" : "running",
      started_ms_ago: Date.now() - entry.startedAt,
      output_bytes: entry.ring.total,
    };
    if (entry.ttlMs !== undefined) info.ttl_ms = entry.ttlMs;
    if (entry.stopped) {
      info.exit = entry.stopped.exit;
      info.signal = entry.stopped.signal;
      info.reason = entry.stopped.reason;
    }
    return info;
  }
}
