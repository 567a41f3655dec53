import { Worker } from "node:worker_threads";
import { ToolError } from "../errors.js";

/**
 * Runs a model-supplied regular expression over file text on a worker thread.
 *
 * JavaScript regular expressions backtrack: a pattern such as `(a+)+$` on a long line can run
 * for minutes, and on the main thread it would freeze everything else, including the timers
 * that enforce timeouts and the Ctrl-C handler. On a worker, the main thread stays free: each
 * file gets a matching budget, and a worker that exceeds it (or whose call is cancelled) is
 * terminated, which stops even a runaway match.
 */

export interface FileMatches {
  /** Matching lines in the file. */
  total: number;
  /** The first `limit` of them: 0-based line index and the line without its "\r". */
  shown: Array<[number, string]>;
}

// CommonJS source evaluated as the worker (no file to locate, bundled or not). Lines are split
// exactly as splitLines does, with a trailing "\r" removed before matching.
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const regex = new RegExp(workerData.pattern, workerData.flags);
parentPort.on("message", ({ text, limit }) => {
  const shown = [];
  let total = 0;
  if (text !== "") {
    const lines = text.split("\\n");
    if (lines[lines.length - 1] === "") lines.pop();
    for (let index = 0; index < lines.length; index++) {
      const raw = lines[index];
      const line = raw.endsWith("\\r") ? raw.slice(0, -1) : raw;
      if (!regex.test(line)) continue;
      total++;
      if (shown.length < limit) shown.push([index, line]);
    }
  }
  parentPort.postMessage({ total, shown });
});
`;

/** Default time one file's matching may take before the pattern is declared too slow. */
export const DEFAULT_MATCH_BUDGET_MS = 10_000;

export class LineMatcher {
  readonly #worker: Worker;
  #failure: Error | undefined;

  /** Starts the worker; the pattern must already be known to compile. */
  constructor(
    pattern: string,
    flags: string,
    private readonly budgetMs: number = DEFAULT_MATCH_BUDGET_MS,
  ) {
    this.#worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { pattern, flags } });
    this.#worker.on("error", (error) => {
      this.#failure = error;
    });
  }

  /** Match every line of `text`; keeps the first `limit` matches. */
  match(text: string, limit: number, signal: AbortSignal): Promise<FileMatches> {
    if (signal.aborted) return Promise.reject(new ToolError("CANCELLED", "the call was cancelled"));
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    return new Promise<FileMatches>((resolve, reject) => {
      const settle = (): void => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        this.#worker.off("message", onMessage);
        this.#worker.off("error", onError);
      };
      const fail = (error: Error): void => {
        settle();
        void this.#worker.terminate();
        reject(error);
      };
      const onMessage = (result: FileMatches): void => {
        settle();
        resolve(result);
      };
      const onError = (error: Error): void => fail(error);
      const onAbort = (): void => fail(new ToolError("CANCELLED", "the call was cancelled"));
      const timer = setTimeout(
        () =>
          fail(
            new ToolError(
              "REGEX_TOO_SLOW",
              `the pattern took over ${this.budgetMs} ms to match one file's lines (catastrophic backtracking)`,
            ),
          ),
        this.budgetMs,
      );
      signal.addEventListener("abort", onAbort, { once: true });
      this.#worker.on("message", onMessage);
      this.#worker.on("error", onError);
      this.#worker.postMessage({ text, limit });
    });
  }

  async close(): Promise<void> {
    await this.#worker.terminate();
  }
}
