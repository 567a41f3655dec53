import { Worker } from "node:worker_threads";
import { processGroupCommit, type SyncIo } from "./group-commit.js";

/**
 * How many fsyncs a process hosting many sessions runs on threads of its own, beyond the pool's:
 * enough for the file system to join a burst of sessions' appends into one commit, few enough
 * that the threads (about 8 MB each, started only when that many fsyncs wait) stay small.
 */
export const HOSTING_FSYNC_THREADS = 8;

let hosting: FsyncThreads | undefined;

/**
 * Called by a door that hosts many sessions in this process (`harness serve`): the process's group
 * commit gets fsync threads of its own. A process with one session never needs them.
 */
export function hostManySessions(): void {
  hosting ??= new FsyncThreads(HOSTING_FSYNC_THREADS);
  processGroupCommit.widen(hosting, HOSTING_FSYNC_THREADS);
}

/**
 * fsyncs on threads of their own, for a process that hosts many sessions. libuv's pool has 4
 * threads, fixed before any of our code runs (an ES module entry is read through the pool), and
 * the group commit leaves one of them to reads, so at most 3 fsyncs were ever on the disk at once.
 * The file system joins concurrent fsyncs into one journal commit, so how many run at once, not
 * how fast one is, bounds a busy server's appends: on ext4 here, 16 threads made 2.5-3.5x the
 * fsyncs a second of 3. Each thread is a small worker (about 8 MB) that does one blocking fsync at
 * a time; threads start on first need, up to `max`, and hold the process open only while busy.
 */
export class FsyncThreads implements SyncIo {
  readonly #idle: FsyncThread[] = [];
  readonly #waiting: Job[] = [];
  #count = 0;

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new TypeError("max must be a positive integer");
  }

  /** Threads started so far and still alive (for tests and benchmarks). */
  get threads(): number {
    return this.#count;
  }

  file(fd: number): Promise<void> {
    return this.#run({ op: "file", fd });
  }

  directory(path: string): Promise<void> {
    return this.#run({ op: "dir", path });
  }

  /** Stop every idle thread (a busy one stops when its fsync is done and nothing waits). */
  close(): Promise<void> {
    const idle = this.#idle.splice(0);
    this.#count -= idle.length;
    const stopping = idle.map((thread) => thread.stop());
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
      let thread = this.#idle.pop();
      if (thread === undefined) {
        if (this.#count >= this.max) return;
        thread = this.#start();
      }
      const job = this.#waiting.shift() as Job;
      thread.run(job);
    }
  }

  #start(): FsyncThread {
    this.#count += 1;
    return new FsyncThread(
      (thread) => {
        this.#idle.push(thread);
        this.#dispatch();
      },
      (thread) => {
        this.#count -= 1;
        const at = this.#idle.indexOf(thread);
        if (at >= 0) this.#idle.splice(at, 1);
        this.#dispatch();
      },
    );
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

/** One worker doing one fsync at a time; `ready` when it can take the next, `gone` when it died. */
class FsyncThread {
  readonly #worker: Worker;
  #job: Job | undefined;
  #gone = false;

  constructor(
    private readonly ready: (thread: FsyncThread) => void,
    private readonly gone: (thread: FsyncThread) => void,
  ) {
    this.#worker = new Worker(THREAD_SOURCE, {
      eval: true,
      // It holds no data of its own: a small heap, and none of the process's stdio.
      resourceLimits: { maxOldGenerationSizeMb: 16 },
      stdout: true,
      stderr: true,
    });
    this.#worker.unref();
    this.#worker.on("message", (reply: unknown) => this.#settle(reply));
    this.#worker.on("error", (error) => this.#die(error));
    this.#worker.on("exit", () => this.#die(new Error("the fsync thread exited")));
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
    this.ready(this);
  }

  /** A thread that died fails the fsync it was running (the writer stops) and is not reused. */
  #die(error: unknown): void {
    if (this.#gone) return;
    this.#gone = true;
    const job = this.#job;
    this.#job = undefined;
    job?.reject(error);
    this.gone(this);
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
