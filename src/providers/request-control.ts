import { normalizeProviderError } from "./errors.js";
import type { ProviderError } from "./provider.js";

export type AbortCause = "caller" | "timeout";

/**
 * One model request's abort signal: fired by the caller's signal or by an idle timer, and
 * remembering which, because whatever the transport throws after an abort says nothing about
 * why (the engine retries a timeout but not a cancellation).
 */
export class RequestControl {
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private cause: AbortCause | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly onCallerAbort = (): void => this.abort("caller");

  /**
   * @param idleTimeoutMs longest time without progress (connecting, headers, or between
   *   stream parts); undefined waits forever.
   */
  constructor(
    private readonly caller: AbortSignal,
    private readonly idleTimeoutMs: number | undefined,
  ) {
    this.signal = this.controller.signal;
    if (caller.aborted) this.abort("caller");
    else caller.addEventListener("abort", this.onCallerAbort, { once: true });
    this.progress();
  }

  get abortedBy(): AbortCause | undefined {
    return this.cause;
  }

  /** Restart the idle timer: the server did something. */
  progress(): void {
    if (this.idleTimeoutMs === undefined || this.cause !== undefined) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.abort("timeout"), this.idleTimeoutMs);
  }

  abort(cause: AbortCause): void {
    this.cause ??= cause;
    this.controller.abort();
  }

  /** The error to report once aborted: TIMEOUT (retryable) or CANCELLED. */
  abortError(provider: string, secrets: readonly string[]): ProviderError {
    return normalizeProviderError(new Error("aborted"), { provider, secrets, abortedBy: this.cause });
  }

  /** Stop the timer and detach from the caller; aborts the request unless it completed. */
  dispose(completed: boolean): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.caller.removeEventListener("abort", this.onCallerAbort);
    if (!completed) this.controller.abort();
  }
}
