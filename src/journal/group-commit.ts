import { fdatasync, fdatasyncSync, promises as fsp } from "node:fs";

/**
 * The one place journal fsyncs of every session in the process are made (group commit), off the
 * main thread: each fsync runs on libuv's thread pool, so while one session waits for the disk
 * the event loop goes on with every other session's work.
 *
 * What is grouped:
 * - per file: requests that arrive while that file's fsync is in flight are made durable together
 *   by the next one (a single fsync for everything written before it started);
 * - across sessions: the files ready at a moment are fsynced concurrently, so the file system
 *   commits them together (ext4 and xfs join concurrent fsyncs into one journal commit), and a
 *   directory several new sessions need (`sessions/`, `.harness`) is fsynced once for all of them.
 *
 * What is kept:
 * - a request resolves only after an fsync that started after it was made, so bytes written
 *   before `sync` was called are on disk when it resolves (intent before effect);
 * - one file's requests resolve in the order they were made: at most one fsync per file is in
 *   flight, and a failed one rejects every request it covered before a later one can start;
 * - no session waits behind another's fsync in its own file; they share only the pool's threads,
 *   at most `parallel` of them, so reads on the pool (workspace files, DNS) are not starved.
 *
 * A process that hosts many sessions widens it (`widen`) with threads of its own: files ready
 * while the pool's share is busy go to them, so the disk sees that many fsyncs at once and
 * commits them together.
 */
export class GroupCommit {
  readonly #targets = new Map<string, Target>();
  /** Targets with requests waiting for a thread, oldest first. */
  readonly #ready: Target[] = [];
  /** Pumps again (one function, so a lane asked to grow many times keeps it once). */
  readonly #wake = () => this.#pump();
  /** Where fsyncs run, first first: libuv's pool, then whatever `widen` added. */
  readonly #lanes: Lane[];
  /**
   * A file fsync asked for while nothing else waits runs at once on this thread (`inlineAlone`):
   * with no other request there is nothing to group it with, and the pool's hop (a thread wake
   * and a loop turn, 0.1-0.2 ms here) was most of what one session paid over a plain fsync. A
   * process that hosts many sessions turns it off (`hostManySessions`): there, one session's
   * fsync must never hold up another's events.
   */
  #inlineAlone = true;

  constructor(parallel = defaultParallel(), io: SyncIo = nodeSyncIo) {
    if (!Number.isInteger(parallel) || parallel < 1)
      throw new TypeError("parallel must be a positive integer");
    this.#lanes = [{ io, parallel, active: 0 }];
  }

  /**
   * Run up to `parallel` more fsyncs at once on `io` once this one's own are all busy. Idempotent
   * for the same `io`: each door that hosts many sessions may ask. An `io` that says how many of
   * its threads are up (`SpillIo`) gets work only for those: a file never waits for a thread to
   * start while the pool could take it; a thread is started when work waits, and takes work once up.
   */
  widen(io: SyncIo | SpillIo, parallel: number): void {
    if (!Number.isInteger(parallel) || parallel < 1)
      throw new TypeError("parallel must be a positive integer");
    if (this.#lanes.some((lane) => lane.io === io)) return;
    this.#lanes.push({ io, parallel, active: 0, ...("grow" in io ? { spill: io } : {}) });
    this.#pump();
  }

  /**
   * Resolve once `fd` and every directory in `dirs` have been fsynced by a call that began after
   * this one; reject with the first error any of them met. `counter.fsyncs` counts the fsyncs made
   * on this request's behalf (one fsync covering several requests counts once).
   */
  sync(fd: number, dirs: readonly string[], counter: { fsyncs: number }): Promise<void> {
    const io = this.#lanes[0]!.io;
    if (this.#inlineAlone && io.fileSync !== undefined && dirs.length === 0 && this.#targets.size === 0) {
      // Nothing in flight or waiting, this file's included: an fsync that starts now covers every
      // byte written before this call, and no other request can be ordered after it.
      try {
        io.fileSync(fd);
      } catch (error) {
        return Promise.reject(error);
      }
      counter.fsyncs += 1;
      return Promise.resolve();
    }
    const waits = [this.#request(`fd:${fd}`, (io) => io.file(fd), counter)];
    for (const dir of dirs) waits.push(this.#request(`dir:${dir}`, (io) => io.directory(dir), counter));
    return waits.length === 1 ? waits[0]! : Promise.all(waits).then(() => undefined);
  }

  /** Whether a lone file fsync runs at once on the calling thread (see `#inlineAlone`). */
  set inlineAlone(on: boolean) {
    this.#inlineAlone = on;
  }

  /** Requests not yet resolved (for tests: the writer is idle when this is 0). */
  get pending(): number {
    let count = 0;
    for (const target of this.#targets.values()) count += target.next.length + target.inFlight;
    return count;
  }

  #request(key: string, run: (io: SyncIo) => Promise<void>, counter: { fsyncs: number }): Promise<void> {
    let target = this.#targets.get(key);
    if (target === undefined) {
      target = { key, run, counter, next: [], inFlight: 0, queued: false };
      this.#targets.set(key, target);
    }
    const { promise, resolve, reject } = deferred();
    target.next.push({ resolve, reject });
    // A target whose fsync is in flight goes back in line when it finishes: that fsync may have
    // started before this request's bytes were written.
    if (!target.queued && target.inFlight === 0) this.#enqueue(target);
    this.#pump();
    return promise;
  }

  #enqueue(target: Target): void {
    target.queued = true;
    this.#ready.push(target);
  }

  #pump(): void {
    while (this.#ready.length > 0) {
      const lane = this.#lanes.find(
        (candidate) =>
          candidate.active < Math.min(candidate.parallel, candidate.spill?.up ?? candidate.parallel),
      );
      if (lane === undefined) {
        // Work waits: a lane that can start another thread does, and pumps when it is up.
        for (const candidate of this.#lanes) {
          if (candidate.spill !== undefined && candidate.spill.up < candidate.parallel)
            candidate.spill.grow(this.#wake);
        }
        return;
      }
      const target = this.#ready.shift() as Target;
      target.queued = false;
      const batch = target.next;
      target.next = [];
      target.inFlight = batch.length;
      lane.active += 1;
      let running: Promise<void>;
      try {
        running = target.run(lane.io);
      } catch (error) {
        running = Promise.reject(error);
      }
      running.then(
        () => this.#settle(lane, target, batch, undefined),
        (error: unknown) => this.#settle(lane, target, batch, error ?? new Error("fsync failed")),
      );
    }
  }

  #settle(lane: Lane, target: Target, batch: readonly Waiter[], error: unknown): void {
    lane.active -= 1;
    target.inFlight = 0;
    if (error === undefined) target.counter.fsyncs += 1;
    for (const waiter of batch) {
      if (error === undefined) waiter.resolve();
      else waiter.reject(error);
    }
    if (target.next.length > 0) this.#enqueue(target);
    else this.#targets.delete(target.key);
    this.#pump();
  }
}

/** The fsyncs themselves, replaceable in tests (a slow or failing disk). */
export interface SyncIo {
  file(fd: number): Promise<void>;
  directory(path: string): Promise<void>;
  /** The file fsync on the calling thread, when this disk has one (a lone request may use it). */
  fileSync?(fd: number): void;
}

/** A `SyncIo` on threads that start on demand (fsync-threads.ts). */
export interface SpillIo extends SyncIo {
  /** Threads up and able to take an fsync (busy or not). */
  readonly up: number;
  /** Start one more thread unless one is starting or all are; `whenUp` once it can take work. */
  grow(whenUp: () => void): void;
}

/**
 * A journal file gets fdatasync: every durable write is an append, which changes the file's size,
 * and fdatasync flushes the size with the data (POSIX: the metadata needed to read the data back);
 * it leaves out only the timestamps. A directory gets fsync: its new entries are what must persist.
 */
export const nodeSyncIo: SyncIo = {
  fileSync: (fd) => fdatasyncSync(fd),
  file: (fd) =>
    new Promise((resolve, reject) => {
      fdatasync(fd, (error) => (error ? reject(error) : resolve()));
    }),
  async directory(path) {
    const handle = await fsp.open(path, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
};

interface Lane {
  io: SyncIo;
  parallel: number;
  active: number;
  spill?: SpillIo;
}

interface Waiter {
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface Target {
  key: string;
  run: (io: SyncIo) => Promise<void>;
  counter: { fsyncs: number };
  /** Requests the next fsync will cover. */
  next: Waiter[];
  /** Requests the fsync in flight covers (0: none in flight). */
  inFlight: number;
  /** In the ready line. */
  queued: boolean;
}

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void } {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * One thread fewer than libuv's pool (4 unless UV_THREADPOOL_SIZE says otherwise), at least one:
 * the fsyncs of many sessions never take every thread from reads waiting on the same pool.
 */
function defaultParallel(): number {
  const size = Number.parseInt(process.env.UV_THREADPOOL_SIZE ?? "", 10);
  const threads = Number.isInteger(size) && size > 0 ? Math.min(size, 1024) : 4;
  return Math.max(1, threads - 1);
}

/** The process's one group commit: every file journal store uses it unless given its own. */
export const processGroupCommit = new GroupCommit();
