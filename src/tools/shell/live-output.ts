/**
 * A running command's output for people watching it (the chat's live line, `--events`): decoded
 * per stream, batched so that a command printing megabytes costs a report every interval at most,
 * and cut to its end, since a watcher only ever shows the last lines. Transient: the result and
 * the artifacts hold the output; this never reaches the journal.
 */

/** At most one report per interval: live to a person, cheap for a command that floods its pipe. */
export const LIVE_OUTPUT_INTERVAL_MS = 100;
/** The most one report carries: what arrived before is dropped (the watcher shows a tail). */
export const LIVE_OUTPUT_MAX_CHARS = 4096;

export class LiveOutput {
  readonly #decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  #pending = "";
  #timer: NodeJS.Timeout | undefined;
  #lastReport = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly report: (text: string) => void,
    private readonly intervalMs = LIVE_OUTPUT_INTERVAL_MS,
  ) {}

  write(stream: "stdout" | "stderr", bytes: Buffer): void {
    // A streaming decoder per pipe keeps a character split across chunks whole.
    this.#pending = tail(this.#pending + this.#decoders[stream].decode(bytes, { stream: true }));
    if (this.#timer !== undefined) return;
    const wait = Math.max(0, this.#lastReport + this.intervalMs - performance.now());
    this.#timer = setTimeout(() => this.#flush(), wait);
  }

  /** The command ended: report what is still pending, and nothing after. */
  close(): void {
    this.#flush();
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#pending === "") return;
    const text = this.#pending;
    this.#pending = "";
    this.#lastReport = performance.now();
    try {
      this.report(text);
    } catch {
      // A watcher's failure must never touch the command or its result.
    }
  }
}

function tail(text: string): string {
  if (text.length <= LIVE_OUTPUT_MAX_CHARS) return text;
  let start = text.length - LIVE_OUTPUT_MAX_CHARS;
  // Never start on the second half of a surrogate pair.
  const code = text.charCodeAt(start);
  if (code >= 0xdc00 && code <= 0xdfff) start += 1;
  return text.slice(start);
}
