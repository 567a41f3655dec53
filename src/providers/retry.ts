/**
 * Retry timing for model requests. Pure policy: the engine decides when to call, journals each
 * attempt, and sleeps; nothing here performs I/O or reads the clock unless given one.
 */

/** Header lookup as the AI SDK and fetch expose them (names compared case-insensitively). */
export type HeaderSource = Headers | Readonly<Record<string, string | undefined>> | undefined;

export function headerValue(headers: HeaderSource, name: string): string | undefined {
  if (headers === undefined) return undefined;
  // Duck-typed: naming the global `Headers` would load Node's fetch implementation (undici).
  if (isHeadersObject(headers)) return headers.get(name) ?? undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

function isHeadersObject(headers: NonNullable<HeaderSource>): headers is Headers {
  return typeof (headers as { get?: unknown }).get === "function";
}

/**
 * The server's requested wait in milliseconds: `retry-after-ms` (OpenAI), else `retry-after` as
 * delta-seconds (fractions allowed) or an HTTP date. Dates in the past give 0. Unparseable
 * values give undefined, so the caller falls back to backoff.
 */
export function parseRetryAfter(headers: HeaderSource, nowMs: number = Date.now()): number | undefined {
  const ms = headerValue(headers, "retry-after-ms")?.trim();
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return Math.ceil(Number(ms));
  const value = headerValue(headers, "retry-after")?.trim();
  if (value === undefined || value === "") return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.ceil(Number(value) * 1000);
  // Only an IMF-fixdate style value is a date; Date.parse would read "-3" as a year.
  if (!/^[A-Za-z]{3},? /.test(value)) return undefined;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

export interface RetryDelayInput {
  /** Failed attempts so far, from 0 for the first retry. */
  attempt: number;
  /** What the server asked for; honoured as given (the budget decides whether to wait that long). */
  retryAfterMs?: number;
  baseMs: number;
  /** Cap of the exponential backoff window. */
  maxMs: number;
  /** Uniform random number in [0, 1). Injected so tests and replays are deterministic. */
  jitter: () => number;
}

/**
 * Milliseconds to wait before the next attempt. A server `Retry-After` wins; otherwise
 * exponential backoff with full jitter: uniform in [0, min(maxMs, baseMs * 2^attempt)].
 */
export function retryDelay(input: RetryDelayInput): number {
  if (input.retryAfterMs !== undefined && Number.isFinite(input.retryAfterMs)) {
    return Math.max(0, Math.ceil(input.retryAfterMs));
  }
  const exponent = Math.max(0, Math.floor(input.attempt));
  const window = Math.min(Math.max(0, input.maxMs), Math.max(0, input.baseMs) * 2 ** Math.min(exponent, 52));
  const r = input.jitter();
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0;
  return Math.floor(unit * window);
}

export interface RetryPolicy {
  /** Total attempts allowed, the first one included. */
  maxAttempts: number;
  /** Total time that may be spent waiting between attempts. */
  maxTotalWaitMs: number;
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 4,
  maxTotalWaitMs: 120_000,
  baseMs: 500,
  maxMs: 20_000,
};

export type RetryDecision =
  | { retry: true; delayMs: number; attempt: number }
  | { retry: false; reason: "not_retryable" | "attempts_exhausted" | "wait_budget_exhausted" };

/** What the budget needs to know about a failure (a ProviderError satisfies this). */
export interface RetryableFailure {
  retryable: boolean;
  retryAfterMs?: number;
}

/**
 * Counts failed attempts and time spent waiting for one model step. `used` restores the
 * counters from journaled attempts after a resume, so a restart does not refill the budget.
 */
export class RetryBudget {
  private failures: number;
  private waitedMs: number;

  constructor(
    private readonly policy: RetryPolicy = DEFAULT_RETRY_POLICY,
    private readonly jitter: () => number = Math.random,
    used: { attempts: number; waitedMs: number } = { attempts: 0, waitedMs: 0 },
  ) {
    this.failures = used.attempts;
    this.waitedMs = used.waitedMs;
  }

  /** Failed attempts recorded so far. */
  get attempts(): number {
    return this.failures;
  }

  get totalWaitMs(): number {
    return this.waitedMs;
  }

  /**
   * Record one failed attempt and decide. A retry is granted only when the failure is
   * retryable, another attempt is allowed, and its wait fits in what is left of the wait budget
   * (a Retry-After longer than that stops now rather than after a pointless wait).
   */
  next(failure: RetryableFailure): RetryDecision {
    const attempt = this.failures;
    this.failures += 1;
    if (!failure.retryable) return { retry: false, reason: "not_retryable" };
    if (this.failures >= this.policy.maxAttempts) return { retry: false, reason: "attempts_exhausted" };
    const delayInput: RetryDelayInput = {
      attempt,
      baseMs: this.policy.baseMs,
      maxMs: this.policy.maxMs,
      jitter: this.jitter,
    };
    if (failure.retryAfterMs !== undefined) delayInput.retryAfterMs = failure.retryAfterMs;
    const delayMs = retryDelay(delayInput);
    if (this.waitedMs + delayMs > this.policy.maxTotalWaitMs) {
      return { retry: false, reason: "wait_budget_exhausted" };
    }
    this.waitedMs += delayMs;
    return { retry: true, delayMs, attempt: this.failures };
  }
}
