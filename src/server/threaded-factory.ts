import { type Dirent, readdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { ErrorCode, RpcError } from "../api/errors.js";
import type { EngineListener, RunSummary } from "../engine/options.js";
import type { QuotaHold, QuotaPort, QuotaSpend } from "../engine/quota-port.js";
import { HOSTING_FSYNC_THREADS } from "../journal/fsync-threads.js";
import { inspectLockFile } from "../journal/lock.js";
import { LOCK_FILE } from "../journal/session-path.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import type { StreamEvent } from "../protocol/types.js";
import type { ApprovalDecision, ApprovalRequest } from "../runtime/ports.js";
import { registeredSecretPaths } from "../session/harness-secrets.js";
import { thisProcess } from "../shared/process-owner.js";
import type { OpenedSession, OpenRequest, SessionFactory, SessionRun } from "./ports.js";
import {
  errorFromWire,
  errorToWire,
  type FromThread,
  type OpenedReply,
  type ThreadSetup,
  type ToThread,
  threadLostError,
} from "./thread-messages.js";

export interface ThreadedOptions {
  /** Session threads at most (sessions go to the least loaded; a thread starts when first needed). */
  threads: number;
  /** What lists and reads sessions at rest (the main thread's own factory: no engine runs there). */
  local: SessionFactory;
  quotas?(identity: string): QuotaPort;
  log(line: string): void;
  /** The thread's program (tests); default: the compiled session-thread.js of this build. */
  entry?: URL;
  /**
   * fsync threads each session thread's group commit adds to libuv's pool (which all threads
   * share); default SESSION_THREAD_FSYNC_THREADS.
   */
  fsyncThreads?: number;
}

/**
 * Measured with bench/group-commit.ts (16 sessions on 2 session threads): see docs. A session
 * thread hosts a share of the sessions, so it needs fewer fsyncs in flight than one loop hosting all.
 */
export const SESSION_THREAD_FSYNC_THREADS = HOSTING_FSYNC_THREADS;

/** What a threaded factory adds: where sessions run, and stopping the threads. */
export interface ThreadedSessionFactory extends SessionFactory {
  /** The thread id a served session runs on (undefined: not open here). */
  threadOf(sessionId: string): number | undefined;
  /** Stop a session's thread as if it crashed (tests of crash containment). */
  killThreadOf(sessionId: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Sessions of `harness serve` hosted on a pool of worker threads, each with its own event loop,
 * engines and group commit, so that many sessions use more than one core. A thread builds a
 * session with the same serveSessionFactory as in-process hosting (session-thread.ts); what
 * crosses is message-shaped (thread-messages.ts). What stays process-wide is kept here: identity
 * quotas (reserve and settle are proxied to this thread's ports), and the clean-up when a thread
 * dies: its sessions fail (the hub stops serving them), the writer locks they held (naming this
 * pid, so never judged stale) are removed, and the process groups they started are killed.
 */
export function threadedSessionFactory(options: ThreadedOptions): ThreadedSessionFactory {
  if (!Number.isInteger(options.threads) || options.threads < 1)
    throw new TypeError("threads must be a positive integer");
  const slots: (SessionThread | undefined)[] = Array.from({ length: options.threads }, () => undefined);
  const pick = (): SessionThread => {
    let best = -1;
    for (let i = 0; i < slots.length; i++) {
      const load = slots[i]?.load ?? 0;
      if (best < 0 || load < (slots[best]?.load ?? 0)) best = i;
    }
    let thread = slots[best];
    if (thread === undefined || thread.dead) {
      thread = new SessionThread(options, () => {
        if (slots[best] === thread) slots[best] = undefined;
      });
      slots[best] = thread;
    }
    return thread;
  };
  const holding = (sessionId: string) => slots.find((thread) => thread?.has(sessionId));
  return {
    open: (request) => pick().open(request),
    store: (workspace) => options.local.store(workspace),
    served: () => options.local.served(),
    threadOf: (sessionId) => holding(sessionId)?.threadId,
    killThreadOf: async (sessionId) => {
      await holding(sessionId)?.kill();
    },
    close: async () => {
      await Promise.all(slots.map((thread) => thread?.kill()));
    },
  };
}

/** The compiled thread program next to this module (or, in the bundle, in dist/src). */
function defaultEntry(): URL {
  const here = import.meta.url;
  if (here.endsWith(".cjs")) return new URL("../src/server/session-thread.js", here);
  if (here.endsWith(".ts")) return new URL("../../dist/src/server/session-thread.js", here);
  return new URL("./session-thread.js", here);
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

interface Served {
  sessionId: string;
  workspace: string;
  listener: EngineListener | undefined;
  approver: ReturnType<OpenRequest["approver"]> | undefined;
  lost(why: string): void;
}

/** One worker thread and the sessions it hosts. */
class SessionThread {
  readonly #worker: Worker;
  readonly #ready: Promise<void>;
  readonly #pending = new Map<number, Pending>();
  readonly #sessions = new Map<string, Served>();
  /** Opens in flight: a thread is chosen by its load, which they are part of. */
  #opening = 0;
  readonly #approvals = new Map<number, AbortController>();
  readonly #holds = new Map<number, { hold: Extract<QuotaHold, { ok: true }>; estimate: QuotaSpend }>();
  readonly #groups = new Set<number>();
  readonly #quotas = new Map<string, QuotaPort>();
  #nextId = 0;
  #threadId: number | undefined;
  #dead: string | undefined;

  constructor(
    private readonly options: ThreadedOptions,
    private readonly gone: () => void,
  ) {
    const setup: ThreadSetup = {
      sessionThread: true,
      secrets: registeredSecretPaths(),
      quotas: options.quotas !== undefined,
      fsyncThreads: options.fsyncThreads ?? SESSION_THREAD_FSYNC_THREADS,
    };
    this.#worker = new Worker(fileURLToPath(options.entry ?? defaultEntry()), {
      workerData: setup,
      // Nothing a thread prints may reach stdout (the protocol, under --stdio): the server's log.
      stdout: true,
      stderr: true,
    });
    this.#worker.stdout.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    this.#worker.stderr.on("data", (chunk: Buffer) => process.stderr.write(chunk));
    this.#ready = new Promise<void>((resolve, reject) => {
      this.#pending.set(0, { resolve: () => resolve(), reject });
    });
    // An open that fails because the thread did not start is reported by open; never unhandled.
    this.#ready.catch(() => undefined);
    this.#worker.on("message", (message: FromThread) => this.#receive(message));
    this.#worker.on("error", (error) => this.#lose(`it failed: ${error.message}`));
    this.#worker.on("exit", (code) => this.#lose(`it exited (code ${code})`));
  }

  get load(): number {
    return this.#dead !== undefined ? Number.POSITIVE_INFINITY : this.#sessions.size + this.#opening;
  }

  get dead(): boolean {
    return this.#dead !== undefined;
  }

  get threadId(): number | undefined {
    return this.#threadId;
  }

  has(sessionId: string): boolean {
    return this.#sessions.has(sessionId);
  }

  async kill(): Promise<void> {
    await this.#worker.terminate();
  }

  async open(request: OpenRequest): Promise<OpenedSession> {
    this.#opening += 1;
    let reply: OpenedReply;
    try {
      await this.#ready;
      reply = (await this.#call((id) => ({
        type: "open",
        id,
        request: {
          workspace: request.workspace,
          ...(request.script !== undefined ? { script: request.script } : {}),
          ...(request.sessionId !== undefined ? { sessionId: request.sessionId } : {}),
          options: request.options,
          identity: request.identity,
        },
      }))) as OpenedReply;
    } finally {
      this.#opening -= 1;
    }
    const local = await this.options.local.store(reply.workspace);
    let lost!: (why: string) => void;
    const whenLost = new Promise<string>((resolve) => {
      lost = resolve;
    });
    const served: Served = {
      sessionId: reply.sessionId,
      workspace: reply.workspace,
      listener: undefined,
      approver: undefined,
      lost,
    };
    served.approver = request.approver(reply.sessionId);
    this.#sessions.set(reply.sessionId, served);
    this.options.log(`session ${reply.sessionId}: hosted on session thread ${this.#threadId}`);
    const session = reply.sessionId;
    const run = (kind: "turn" | "compact", input: string | undefined, listener: EngineListener) =>
      this.#run(served, kind, input, listener);
    return {
      sessionId: session,
      workspace: reply.workspace,
      // Reads only (the hub reads through its stores); the writer is the thread's.
      store: local!.store,
      records: reply.records as AnyRecord[],
      refusedCommands: reply.refused,
      lost: whenLost,
      turn: (input, listener) => {
        const name = COMMAND.exec(input.trim())?.[1];
        const refused = name !== undefined ? reply.refused[name] : undefined;
        if (refused !== undefined)
          throw new RpcError(ErrorCode.InvalidParams, refused, { code: "COMMAND_NOT_LOADED", command: name });
        return run("turn", input, listener);
      },
      compact: (instructions, listener) => run("compact", instructions, listener),
      close: async () => {
        if (!this.#sessions.has(session)) return;
        this.#sessions.delete(session);
        if (this.#dead === undefined) await this.#call((id) => ({ type: "close", id, session }));
      },
    };
  }

  #run(
    served: Served,
    kind: "turn" | "compact",
    input: string | undefined,
    listener: EngineListener,
  ): SessionRun {
    const session = served.sessionId;
    let started = false;
    let interrupted = false;
    const steers: string[] = [];
    let journaled!: () => void;
    const firstRecord = new Promise<void>((resolve) => {
      journaled = resolve;
    });
    // The hub's listener, told first when the run journals its first record.
    const relay: EngineListener = {
      ...listener,
      record: (record) => {
        journaled();
        listener.record?.(record);
      },
    };
    return {
      started: firstRecord,
      run: async () => {
        if (this.#dead !== undefined) {
          journaled();
          throw threadLostError(this.#dead);
        }
        served.listener = relay;
        started = true;
        const done = this.#call((id) => ({ type: "run", id, session, kind, input }));
        if (interrupted) this.#post({ type: "interrupt", session });
        for (const text of steers.splice(0))
          void this.#call((id) => ({ type: "steer", id, session, text })).catch(() => undefined);
        try {
          return (await done) as RunSummary;
        } finally {
          journaled();
          if (served.listener === relay) served.listener = undefined;
        }
      },
      steer: async (text) => {
        if (!started) steers.push(text);
        else if (this.#dead === undefined) await this.#call((id) => ({ type: "steer", id, session, text }));
      },
      interrupt: () => {
        interrupted = true;
        if (started && this.#dead === undefined) this.#post({ type: "interrupt", session });
      },
    };
  }

  #receive(message: FromThread): void {
    switch (message.type) {
      case "batch":
        for (const each of message.messages) this.#receive(each);
        return;
      case "ready":
        this.#threadId = message.threadId;
        this.#settle(0, true, undefined);
        return;
      case "reply":
        if (message.ok) this.#settle(message.id, true, message.value);
        else this.#settle(message.id, false, errorFromWire(message.error));
        return;
      case "record":
        this.#sessions.get(message.session)?.listener?.record?.(message.record as AnyRecord);
        return;
      case "agent-record":
        this.#sessions
          .get(message.session)
          ?.listener?.agentRecord?.(message.path, message.record as AnyRecord);
        return;
      case "stream":
        this.#sessions.get(message.session)?.listener?.stream?.(message.event as StreamEvent);
        return;
      case "approval":
        this.#approval(message.session, message.approval, message.request as ApprovalRequest);
        return;
      case "approval.cancel":
        this.#approvals.get(message.approval)?.abort();
        this.#approvals.delete(message.approval);
        return;
      case "quota.reserve":
        void this.#reserve(message.id, message.identity, message.estimate as QuotaSpend);
        return;
      case "quota.settle":
        void this.#settleHold(message.id, message.hold, message.actual as QuotaSpend);
        return;
      case "groups":
        if (message.add !== undefined) this.#groups.add(message.add);
        if (message.remove !== undefined) this.#groups.delete(message.remove);
        return;
      case "log":
        this.options.log(message.line);
        return;
    }
  }

  #approval(session: string, approval: number, request: ApprovalRequest): void {
    const approver = this.#sessions.get(session)?.approver;
    const controller = new AbortController();
    this.#approvals.set(approval, controller);
    const decided = approver
      ? approver.request(request, controller.signal)
      : Promise.resolve<ApprovalDecision>({ decision: "deny", scope: "once", by: "server" });
    decided.then(
      (decision) => {
        this.#approvals.delete(approval);
        this.#post({ type: "decision", approval, decision });
      },
      () => {
        this.#approvals.delete(approval);
        this.#post({
          type: "decision",
          approval,
          decision: { decision: "deny", scope: "once", by: "server" },
        });
      },
    );
  }

  async #reserve(id: number, identity: string, estimate: QuotaSpend): Promise<void> {
    try {
      const port = this.#quotaOf(identity);
      const hold = await port.reserve(estimate);
      if (!hold.ok) {
        this.#post({ type: "quota.reply", id, ok: true, value: hold });
        return;
      }
      const key = ++this.#nextId;
      this.#holds.set(key, { hold, estimate });
      this.#post({
        type: "quota.reply",
        id,
        ok: true,
        value: { ok: true, hold: key, ...(hold.left !== undefined ? { left: hold.left } : {}) },
      });
    } catch (error) {
      this.#post({ type: "quota.reply", id, ok: false, error: errorToWire(error) });
    }
  }

  async #settleHold(id: number, key: number, actual: QuotaSpend): Promise<void> {
    const held = this.#holds.get(key);
    this.#holds.delete(key);
    try {
      const left = held ? await held.hold.settle(actual) : undefined;
      this.#post({ type: "quota.reply", id, ok: true, value: left });
    } catch (error) {
      this.#post({ type: "quota.reply", id, ok: false, error: errorToWire(error) });
    }
  }

  #quotaOf(identity: string): QuotaPort {
    let port = this.#quotas.get(identity);
    if (port === undefined) {
      const made = this.options.quotas?.(identity);
      if (made === undefined) throw new Error("no identity quotas in this server");
      port = made;
      this.#quotas.set(identity, port);
    }
    return port;
  }

  #call(message: (id: number) => ToThread): Promise<unknown> {
    if (this.#dead !== undefined) return Promise.reject(threadLostError(this.#dead));
    const id = ++this.#nextId;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#post(message(id));
    });
  }

  #settle(id: number, ok: boolean, value: unknown): void {
    const pending = this.#pending.get(id);
    this.#pending.delete(id);
    if (ok) pending?.resolve(value);
    else pending?.reject(value);
  }

  #post(message: ToThread): void {
    if (this.#dead === undefined) this.#worker.postMessage(message);
  }

  /**
   * The thread is gone: everything waiting on it fails, its approvals are withdrawn, its sessions'
   * quota holds are settled at their estimates (whether the request was sent is unknown, so it is
   * counted), the process groups it started are killed, and its writer locks are removed so that
   * the sessions can be opened again (each resumes as after a crash: its journal says what was
   * left unfinished, and nothing unknown is guessed).
   */
  #lose(why: string): void {
    if (this.#dead !== undefined) return;
    this.#dead = why;
    this.gone();
    const error = threadLostError(why);
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
    for (const controller of this.#approvals.values()) controller.abort();
    this.#approvals.clear();
    for (const { hold, estimate } of this.#holds.values()) void hold.settle(estimate).catch(() => undefined);
    this.#holds.clear();
    for (const pgid of this.#groups) {
      try {
        process.kill(-pgid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    this.#groups.clear();
    for (const served of this.#sessions.values()) {
      removeOwnLocks(join(served.workspace, ".harness", "sessions", ...served.sessionId.split("/")));
      this.options.log(
        `session ${served.sessionId}: its session thread stopped (${why}); open it again to resume`,
      );
      served.lost(why);
    }
    this.#sessions.clear();
  }
}

const COMMAND = /^\/([A-Za-z0-9][A-Za-z0-9_-]{0,63})(?:\s+[\s\S]*)?$/;

/** Writer locks under a session's directory (its own and its sub-agents') that name this process. */
function removeOwnLocks(dir: string): void {
  const self = thisProcess();
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) removeOwnLocks(path);
    else if (entry.isFile() && entry.name === LOCK_FILE) {
      const status = inspectLockFile(path);
      if (status?.state === "alive" && status.owner.pid === self.pid && status.owner.host === self.host) {
        try {
          unlinkSync(path);
        } catch {
          // Removed meanwhile.
        }
      }
    }
  }
}
