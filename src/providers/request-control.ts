import { normalizeProviderError } from "./errors.js";
import { ProviderError } from "./provider.js";
import { DEFAULT_REQUEST_DEADLINE_MS } from "./request-deadline.js";

export type AbortCause = "caller" | "timeout" | "deadline";

export interface RequestLimits {
  /**
   * Longest time without progress: connecting, the response headers, then a protocol event the
   * adapter produced from the stream (text, reasoning, a tool-call fragment, usage, the end).
   * Keep-alive comments and empty deltas are not progress. Undefined: no idle limit.
   */
  idleTimeoutMs?: number | undefined;
  /**
   * Longest time the whole request may take, from the first byte sent to the end event, however
   * much the server sends. Undefined: DEFAULT_REQUEST_DEADLINE_MS.
   */
  deadlineMs?: number | undefined;
}

/**
 * One model request's abort signal: fired by the caller's signal, by an idle timer or by the
 * overall deadline, and remembering which, because whatever the transport throws after an abort
 * says nothing about why (the engine retries a timeout but not a cancellation).
 *
 * The deadline is what bounds a server that keeps a stream alive without ever finishing it:
 * comments and empty deltas do not restart the idle timer, but a trickle of real content would,
 * forever; the deadline does not move.
 */
export class RequestControl {
  readonly signal: AbortSignal;
  readonly deadlineMs: number;
  private readonly controller = new AbortController();
  private cause: AbortCause | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly deadline: NodeJS.Timeout;
  private readonly idleTimeoutMs: number | undefined;
  private readonly onCallerAbort = (): void => this.abort("caller");

  constructor(
    private readonly caller: AbortSignal,
    limits: RequestLimits = {},
  ) {
    this.signal = this.controller.signal;
    this.idleTimeoutMs = limits.idleTimeoutMs;
    this.deadlineMs = limits.deadlineMs ?? DEFAULT_REQUEST_DEADLINE_MS;
    this.deadline = setTimeout(() => this.abort("deadline"), this.deadlineMs);
    if (caller.aborted) this.abort("caller");
    else caller.addEventListener("abort", this.onCallerAbort, { once: true });
    this.progress();
  }

  get abortedBy(): AbortCause | undefined {
    return this.cause;
  }

  /** Restart the idle timer: the server sent content (never call it for keep-alives). */
  progress(): void {
    if (this.idleTimeoutMs === undefined || this.cause !== undefined) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.abort("timeout"), this.idleTimeoutMs);
  }

  abort(cause: AbortCause): void {
    this.cause ??= cause;
    this.controller.abort();
  }

  /** The error to report once aborted: TIMEOUT (retryable, for the idle timer and the deadline) or CANCELLED. */
  abortError(provider: string, secrets: readonly string[]): ProviderError {
    if (this.cause === "deadline") return deadlineError(provider, this.deadlineMs);
    return normalizeProviderError(new Error("aborted"), { provider, secrets, abortedBy: this.cause });
  }

  /** Stop the timers and detach from the caller; aborts the request unless it completed. */
  dispose(completed: boolean): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    clearTimeout(this.deadline);
    this.caller.removeEventListener("abort", this.onCallerAbort);
    if (!completed) this.controller.abort();
  }
}

/**
 * The request ran past its overall deadline. Retryable (a slow server may answer in time on the
 * next attempt; the engine's retry budget bounds how often), and it says how to allow more time.
 */
export function deadlineError(provider: string, deadlineMs: number): ProviderError {
  return new ProviderError(
    "TIMEOUT",
    `${provider}: the request did not finish within its overall deadline of ${deadlineMs} ms; ` +
      "allow more with --request-deadline MS or the model profile's request_deadline_ms",
    { providerCode: "request_deadline" },
  );
}
