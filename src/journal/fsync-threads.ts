import { Worker } from "node:worker_threads";
import { processGroupCommit, type SpillIo } from "./group-commit.js";

/**
 * How many fsyncs a process hosting many sessions runs on threads of its own, beyond the pool's:
 * enough for the file system to join a burst of sessions' appends into one commit, few enough
 * that the threads (about 8 MB each, started only when that many fsyncs wait) stay small.
 */
export const HOSTING_FSYNC_THREADS = 8;

let hosting: FsyncThreads | undefined;

/**
 * Called by a door that hosts many sessions in this process (`harness serve`, and each of its
 * session threads): the process's group commit gets `fsyncThreads` threads of its own (0: libuv's
 * pool only), and never fsyncs on the calling thread. A process with one session needs neither.
 */
export function hostManySessions(fsyncThreads: number = HOSTING_FSYNC_THREADS): void {
  // One session's fsync never runs on this thread: other sessions' events would wait for it.
  processGroupCommit.inlineAlone = false;
  if (fsyncThreads < 1) return;
  hosting ??= new FsyncThreads(fsyncThreads);
  processGroupCommit.widen(hosting, hosting.max);
}

/**
 * fsyncs on threads of their own, for a process that hosts many sessions. libuv's pool has 4
 * threads, fixed before any of our code runs (an ES module entry is read through the pool), and
 * the group commit leaves one of them to reads, so at most 3 fsyncs were ever on the disk at once.
 * The file system joins concurrent fsyncs into one journal commit, so how many run at once, not
 * how fast one is, bounds a busy server's appends: on ext4 here, 16 threads made 2.5-3.5x the
 * fsyncs a second of 3. Each thread is a small worker (about 7 MB) doing one blocking fsync at a
 * time. Threads start one at a time when work waits (`grow`, or a call with none idle), up to
 * `max`, and hold the process open only while busy.
 */
export class FsyncThreads implements SpillIo {
  readonly #idle: FsyncThread[] = [];
  readonly #all = new Set<FsyncThread>();
  readonly #waiting: Job[] = [];
  readonly #whenUp = new Set<() => void>();
  #up = 0;
  #starting = 0;

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new TypeError("max must be a positive integer");
  }

  /** Threads up (busy or idle). */
  get up(): number {
    return this.#up;
  }

  /** Threads up or starting (for tests and benchmarks). */
  get threads(): number {
    return this.#up + this.#starting;
  }

  file(fd: number): Promise<void> {
    return this.#run({ op: "file", fd });
  }

  directory(path: string): Promise<void> {
    return this.#run({ op: "dir", path });
  }

  grow(whenUp: () => void): void {
    this.#whenUp.add(whenUp);
    if (this.#starting === 0 && this.threads < this.max) this.#start();
  }

  /** Stop every thread idle or starting (a busy one stays until the process ends). */
  close(): Promise<void> {
    const stopping: Promise<number>[] = [];
    for (const thread of this.#all) {
      if (thread.busy) continue;
      this.#all.delete(thread);
      if (thread.isUp) this.#up -= 1;
      else this.#starting -= 1;
      stopping.push(thread.stop());
    }
    this.#idle.length = 0;
    return Promise.all(stopping).then(() => undefined);
  }

  #run(request: Request): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#waiting.push({ request, resolve, reject });
      this.#dispatch();
    });
  }

  #dispatch(): void {
    while (this.#waiting.length > 0) {
      const thread = this.#idle.pop();
      if (thread === undefined) {
        if (this.#starting === 0 && this.threads < this.max) this.#start();
        return;
      }
      thread.run(this.#waiting.shift() as Job);
    }
  }

  #start(): void {
    this.#starting += 1;
    const thread = new FsyncThread({
      up: (thread) => {
        this.#starting -= 1;
        this.#up += 1;
        this.#idle.push(thread);
        this.#dispatch();
        const waiting = [...this.#whenUp];
        this.#whenUp.clear();
        for (const whenUp of waiting) whenUp();
      },
      ready: (thread) => {
        this.#idle.push(thread);
        this.#dispatch();
      },
      gone: (thread, wasUp) => {
        this.#all.delete(thread);
        if (wasUp) this.#up -= 1;
        else this.#starting -= 1;
        const at = this.#idle.indexOf(thread);
        if (at >= 0) this.#idle.splice(at, 1);
        this.#dispatch();
      },
    });
    this.#all.add(thread);
  }
}

type Request = { op: "file"; fd: number } | { op: "dir"; path: string };

interface Job {
  request: Request;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * The thread's whole program, CommonJS evaluated as text so that it needs no file next to the
 * bundle. A journal file gets fdatasync: an append changes the file's size, which fdatasync
 * flushes with the data (POSIX: the metadata needed to read the data back), and only the mtime
 * is left to the next flush. A directory gets fsync: its new entry is what must reach the disk.
 */
const THREAD_SOURCE = `
const { parentPort } = require("node:worker_threads");
const fs = require("node:fs");
parentPort.on("message", (request) => {
  try {
    if (request.op === "file") fs.fdatasyncSync(request.fd);
    else {
      const fd = fs.openSync(request.path, "r");
      try { fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
    }
    parentPort.postMessage({ ok: true });
  } catch (error) {
    parentPort.postMessage({ ok: false, code: error && error.code, message: String(error && error.message) });
  }
});
`;

interface ThreadEvents {
  /** Started: it can take its first fsync. */
  up(thread: FsyncThread): void;
  /** Done with an fsync: it can take the next. */
  ready(thread: FsyncThread): void;
  /** Died (before or after it was up); never used again. */
  gone(thread: FsyncThread, wasUp: boolean): void;
}

/** One worker doing one fsync at a time. */
class FsyncThread {
  readonly #worker: Worker;
  #job: Job | undefined;
  #up = false;
  #gone = false;

  constructor(private readonly events: ThreadEvents) {
    this.#worker = new Worker(THREAD_SOURCE, {
      eval: true,
      // It holds no data of its own: a small heap, and none of the process's stdio.
      resourceLimits: { maxOldGenerationSizeMb: 16 },
      stdout: true,
      stderr: true,
    });
    this.#worker.unref();
    this.#worker.once("online", () => {
      if (this.#gone) return;
      this.#up = true;
      this.events.up(this);
    });
    this.#worker.on("message", (reply: unknown) => this.#settle(reply));
    this.#worker.on("error", (error) => this.#die(error));
    this.#worker.on("exit", () => this.#die(new Error("the fsync thread exited")));
  }

  get busy(): boolean {
    return this.#job !== undefined;
  }

  get isUp(): boolean {
    return this.#up;
  }

  run(job: Job): void {
    this.#job = job;
    // Busy: the process waits for this fsync (an append is waiting on it); idle: it never keeps
    // the process alive.
    this.#worker.ref();
    this.#worker.postMessage(job.request);
  }

  stop(): Promise<number> {
    this.#gone = true;
    return this.#worker.terminate();
  }

  #settle(reply: unknown): void {
    const job = this.#job;
    this.#job = undefined;
    this.#worker.unref();
    if (job !== undefined) {
      const answer = reply as { ok: boolean; code?: unknown; message?: unknown };
      if (answer.ok) job.resolve();
      else job.reject(errnoError(answer.code, answer.message));
    }
    this.events.ready(this);
  }

  /** A thread that died fails the fsync it was running (the writer stops) and is not reused. */
  #die(error: unknown): void {
    if (this.#gone) return;
    this.#gone = true;
    const job = this.#job;
    this.#job = undefined;
    job?.reject(error);
    this.events.gone(this, this.#up);
  }
}

/** An Error with the errno code the thread saw, as node:fs reports it on this thread. */
function errnoError(code: unknown, message: unknown): Error {
  const error = new Error(typeof message === "string" ? message : "fsync failed") as Error & {
    code?: string;
  };
  if (typeof code === "string") error.code = code;
  return error;
}
