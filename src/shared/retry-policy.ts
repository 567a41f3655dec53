/**
 * The one retry policy of harness: how many attempts a failing operation gets and how long to wait
 * before each next one. Model requests (engine) and transient tool failures (runtime) both run
 * under it, each with its own numbers. Pure: the caller journals each retry and sleeps; nothing
 * here performs I/O or reads the clock.
 */

/** How a wait is drawn from the backoff window. */
export type Jitter =
  /** Uniform in [0, window]: many clients retrying one server spread out the most (model requests). */
  | "full"
  /** Uniform in [window/2, window]: never again at once, still spread (tool retries). */
  | "equal";

export interface RetryPolicy {
  /** Total attempts allowed, the first one included. */
  maxAttempts: number;
  /** Total time that may be spent waiting between attempts. */
  maxTotalWaitMs: number;
  baseMs: number;
  /** Cap of the exponential backoff window. */
  maxMs: number;
  jitter: Jitter;
}

export interface RetryDelayInput {
  /** Failed attempts before this one, from 0 for the first retry. */
  attempt: number;
  /** What the server asked for; honoured as given (the budget decides whether to wait that long). */
  retryAfterMs?: number;
  baseMs: number;
  maxMs: number;
  /** Default "full". */
  jitter?: Jitter;
  /** Uniform random number in [0, 1). Injected so tests and replays are deterministic. */
  random: () => number;
}

/**
 * Milliseconds to wait before the next attempt. A server's `Retry-After` wins; otherwise
 * exponential backoff in the window min(maxMs, baseMs * 2^attempt), jittered as the policy says.
 */
export function retryDelay(input: RetryDelayInput): number {
  if (input.retryAfterMs !== undefined && Number.isFinite(input.retryAfterMs)) {
    return Math.max(0, Math.ceil(input.retryAfterMs));
  }
  const exponent = Math.max(0, Math.floor(input.attempt));
  const window = Math.min(Math.max(0, input.maxMs), Math.max(0, input.baseMs) * 2 ** Math.min(exponent, 52));
  const r = input.random();
  const unit = Number.isFinite(r) ? Math.min(Math.max(r, 0), 1) : 0;
  if (input.jitter === "equal") return Math.round(window / 2 + unit * (window / 2));
  return Math.floor(unit * window);
}

export type RetryDecision =
  | { retry: true; delayMs: number; attempt: number }
  | { retry: false; reason: "not_retryable" | "attempts_exhausted" | "wait_budget_exhausted" };

/** What the budget needs to know about a failure (a ProviderError satisfies this). */
export interface RetryableFailure {
  retryable: boolean;
  retryAfterMs?: number;
}

/**
 * Counts failed attempts and time spent waiting for one operation (a model step, a tool call).
 * `used` restores the counters from journaled attempts after a resume, so a restart does not
 * refill the budget.
 */
export class RetryBudget {
  private failures: number;
  private waitedMs: number;

  constructor(
    private readonly policy: RetryPolicy,
    private readonly random: () => number = Math.random,
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
   * (a Retry-After longer than that stops now rather than after a pointless wait). `attempt` of
   * a retry is the number of failed attempts so far.
   */
  next(failure: RetryableFailure): RetryDecision {
    const attempt = this.failures;
    this.failures += 1;
    if (!failure.retryable) return { retry: false, reason: "not_retryable" };
    if (this.failures >= this.policy.maxAttempts) return { retry: false, reason: "attempts_exhausted" };
    const delayMs = retryDelay({
      attempt,
      ...(failure.retryAfterMs !== undefined ? { retryAfterMs: failure.retryAfterMs } : {}),
      baseMs: this.policy.baseMs,
      maxMs: this.policy.maxMs,
      jitter: this.policy.jitter,
      random: this.random,
    });
    if (this.waitedMs + delayMs > this.policy.maxTotalWaitMs) {
      return { retry: false, reason: "wait_budget_exhausted" };
    }
    this.waitedMs += delayMs;
    return { retry: true, delayMs, attempt: this.failures };
  }
}
