import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import { ToolError } from "../../errors.js";
import { requiredLiteral } from "./literal.js";
import { WORKER_SOURCE } from "./worker-source.js";

/**
 * Runs grep's matching on a pool of worker threads that lives as long as the process (started on
 * first use, unreferenced so it never keeps the process alive), fed batches of files.
 *
 * JavaScript regular expressions backtrack: a pattern such as `(a+)+$` on a long line can run
 * for minutes, and on the main thread it would freeze everything else, including the timers
 * that enforce timeouts and the Ctrl-C handler. On a worker the main thread stays free: each
 * batch gets the matching budget (batches are a few small files, so the budget is in effect per
 * file), and a worker that exceeds it, or whose call is cancelled, is terminated and replaced,
 * which stops even a runaway match without touching other calls' batches.
 */

/** Default time one batch's matching may take before the pattern is declared too slow. */
export const DEFAULT_MATCH_BUDGET_MS = 10_000;
/** Files per batch: small enough that a batch takes milliseconds, large enough to amortize messages. */
export const BATCH_FILES = 32;

export interface FileMatches {
  /** Matching lines in the file (0 when it is not text). */
  total: number;
  /** The first `limit` of them: 0-based line index and the line (cut to lineChars + 1). */
  shown: Array<[number, string]>;
  /** The file is not text (binary or not UTF-8) but would have matched: counted, not shown. */
  skipped: boolean;
}

/** One file for a batch: bytes read through the workspace, or a path the worker opens under `root`. */
export type BatchFile = { bytes: Uint8Array } | { path: string };

export interface MatchJob {
  pattern: string;
  flags: string;
  /** Set when the whole pattern is this literal and case matters: the byte-search fast path. */
  literal?: string;
  limit: number;
  lineChars: number;
  /** Real host path of the workspace root, for `{ path }` files. */
  root?: string;
}

/** What a worker receives: the job, plus a literal every match contains (set by the pool). */
type WorkerJob = MatchJob & { required?: string };

interface Slot {
  worker: Worker;
  /** Resolves once the worker has booted: the budget counts matching time, not start-up. */
  ready: Promise<void>;
  busy: boolean;
}

class MatcherPool {
  readonly #slots: Slot[] = [];
  readonly #waiting: Array<(slot: Slot) => void> = [];
  #nextId = 0;

  constructor(readonly size: number) {}

  /** Match one batch; rejects with REGEX_TOO_SLOW or CANCELLED (the worker is then replaced). */
  async run(
    job: MatchJob,
    files: BatchFile[],
    budgetMs: number,
    signal: AbortSignal,
  ): Promise<FileMatches[]> {
    const slot = await this.#acquire(signal);
    try {
      await slot.ready;
      if (signal.aborted) throw cancelled();
      return await this.#send(slot, job, files, budgetMs, signal);
    } finally {
      this.#release(slot);
    }
  }

  #acquire(signal: AbortSignal): Promise<Slot> {
    if (signal.aborted) return Promise.reject(cancelled());
    const idle = this.#slots.find((slot) => !slot.busy);
    if (idle !== undefined) {
      idle.busy = true;
      return Promise.resolve(idle);
    }
    if (this.#slots.length < this.size) {
      const slot: Slot = { ...spawnWorker(), busy: true };
      this.#slots.push(slot);
      return Promise.resolve(slot);
    }
    return new Promise<Slot>((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.#waiting.indexOf(take);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(cancelled());
      };
      const take = (slot: Slot): void => {
        signal.removeEventListener("abort", onAbort);
        slot.busy = true;
        resolve(slot);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(take);
    });
  }

  #release(slot: Slot): void {
    slot.busy = false;
    this.#waiting.shift()?.(slot);
  }

  #send(
    slot: Slot,
    job: MatchJob,
    files: BatchFile[],
    budgetMs: number,
    signal: AbortSignal,
  ): Promise<FileMatches[]> {
    const id = this.#nextId++;
    const { worker } = slot;
    return new Promise<FileMatches[]>((resolve, reject) => {
      const settle = (): void => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        worker.off("message", onMessage);
        worker.off("error", onError);
      };
      // A worker stopped mid-batch cannot be trusted with the next one: replace it.
      const fail = (error: Error): void => {
        settle();
        void worker.terminate();
        Object.assign(slot, spawnWorker());
        reject(error);
      };
      const onMessage = (reply: { id: number; results: FileMatches[] }): void => {
        if (reply.id !== id) return;
        settle();
        resolve(reply.results);
      };
      const onError = (error: Error): void => fail(error);
      const onAbort = (): void => fail(cancelled());
      const timer = setTimeout(
        () =>
          fail(
            new ToolError(
              "REGEX_TOO_SLOW",
              `the pattern took over ${budgetMs} ms to match one file's lines (catastrophic backtracking)`,
            ),
          ),
        budgetMs,
      );
      signal.addEventListener("abort", onAbort, { once: true });
      worker.on("message", onMessage);
      worker.on("error", onError);
      worker.postMessage({ ...withRequired(job), id, files });
    });
  }
}

/** The last pattern's required literal: every batch of a search asks for the same one. */
let lastRequired: { pattern: string; required: string | undefined } | undefined;

/**
 * A regular expression's job gains the literal every match must contain (case-sensitive patterns
 * only): a file without those bytes is answered "no match" without being decoded and split into
 * lines, which is most of the cost of a search whose files mostly do not match. It cannot change
 * an answer: a matching line is a substring of the file's decoded text, and a literal without
 * U+FFFD, NUL, line breaks or lone surrogates (see requiredLiteral) decodes only from its own bytes.
 */
function withRequired(job: MatchJob): WorkerJob {
  if (job.literal !== undefined || job.flags !== "") return job;
  if (lastRequired?.pattern !== job.pattern) {
    lastRequired = { pattern: job.pattern, required: requiredLiteral(job.pattern, false) };
  }
  const { required } = lastRequired;
  return required === undefined ? job : { ...job, required };
}

function spawnWorker(): { worker: Worker; ready: Promise<void> } {
  const worker = new Worker(WORKER_SOURCE, { eval: true });
  worker.unref();
  // Errors are reported to the batch that is running; one between batches must not crash harness.
  worker.on("error", () => undefined);
  const ready = new Promise<void>((resolve) => {
    const onReady = (message: unknown): void => {
      if (message !== "ready") return;
      worker.off("message", onReady);
      resolve();
    };
    worker.on("message", onReady);
    // A worker that dies while booting is reported by the batch sent to it.
    worker.once("exit", () => resolve());
  });
  return { worker, ready };
}

function cancelled(): ToolError {
  return new ToolError("CANCELLED", "the call was cancelled");
}

let shared: MatcherPool | undefined;

/** The process's pool: as many workers as cores, at most 4. */
export function matcherPool(): MatcherPool {
  shared ??= new MatcherPool(Math.max(1, Math.min(4, availableParallelism())));
  return shared;
}

export type { MatcherPool };
