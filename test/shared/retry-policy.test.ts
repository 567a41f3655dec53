import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ProviderError } from "../../src/providers/provider.js";
import { RetryBudget, type RetryPolicy, retryDelay } from "../../src/shared/retry-policy.js";

describe("retryDelay", () => {
  it("honours Retry-After as given, even beyond the backoff cap", () => {
    expect(retryDelay({ attempt: 0, retryAfterMs: 7000, baseMs: 100, maxMs: 1000, random: () => 0.99 })).toBe(
      7000,
    );
    expect(retryDelay({ attempt: 3, retryAfterMs: 0, baseMs: 100, maxMs: 1000, random: () => 0.99 })).toBe(0);
  });

  it("full jitter: the window doubles per attempt and is capped by maxMs", () => {
    const at = (attempt: number) => retryDelay({ attempt, baseMs: 100, maxMs: 1000, random: () => 0.999999 });
    expect([0, 1, 2, 3, 4, 10, 60].map(at)).toEqual([99, 199, 399, 799, 999, 999, 999]);
    expect(retryDelay({ attempt: 5, baseMs: 100, maxMs: 1000, random: () => 0 })).toBe(0);
  });

  it("equal jitter: the upper half of the same window, rounded", () => {
    const at = (attempt: number, r: number) =>
      retryDelay({ attempt, baseMs: 100, maxMs: 1000, jitter: "equal", random: () => r });
    expect([0, 1, 2, 3, 4, 10].map((attempt) => at(attempt, 0))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([0, 1, 2, 3, 4, 10].map((attempt) => at(attempt, 0.5))).toEqual([75, 150, 300, 600, 750, 750]);
    expect(at(0, 0.999999)).toBe(100);
  });

  it("is always within [0, maxMs] without Retry-After", () => {
    fc.assert(
      fc.property(
        fc.nat(1000),
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 120_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (attempt, baseMs, maxMs, r) => {
          const delay = retryDelay({ attempt, baseMs, maxMs, random: () => r });
          return Number.isInteger(delay) && delay >= 0 && delay <= maxMs;
        },
      ),
    );
  });
});

describe("RetryBudget", () => {
  const policy: RetryPolicy = {
    maxAttempts: 3,
    maxTotalWaitMs: 10_000,
    baseMs: 1000,
    maxMs: 8000,
    jitter: "full",
  };
  const retryable = new ProviderError("SERVER", "boom");

  it("stops after maxAttempts total attempts and numbers the next attempt", () => {
    const budget = new RetryBudget(policy, () => 0.5);
    expect(budget.next(retryable)).toEqual({ retry: true, delayMs: 500, attempt: 1 });
    expect(budget.next(retryable)).toEqual({ retry: true, delayMs: 1000, attempt: 2 });
    expect(budget.next(retryable)).toEqual({ retry: false, reason: "attempts_exhausted" });
    expect(budget.attempts).toBe(3);
    expect(budget.totalWaitMs).toBe(1500);
  });

  it("never retries a non-retryable failure", () => {
    const budget = new RetryBudget(policy, () => 0.5);
    expect(budget.next(new ProviderError("AUTH", "no"))).toEqual({ retry: false, reason: "not_retryable" });
    expect(budget.next(new ProviderError("CONTEXT_WINDOW_EXCEEDED", "big"))).toEqual({
      retry: false,
      reason: "not_retryable",
    });
  });

  it("stops when the wait would exceed the total wait budget (a long Retry-After stops now)", () => {
    const budget = new RetryBudget({ ...policy, maxAttempts: 10 }, () => 0.5);
    const limited = new ProviderError("RATE_LIMIT", "slow down", { retryAfterMs: 6000 });
    expect(budget.next(limited)).toEqual({ retry: true, delayMs: 6000, attempt: 1 });
    expect(budget.next(limited)).toEqual({ retry: false, reason: "wait_budget_exhausted" });
    expect(budget.totalWaitMs).toBe(6000);
  });

  it("restores used attempts and wait after a resume", () => {
    const budget = new RetryBudget(policy, () => 0.5, { attempts: 2, waitedMs: 9_900 });
    expect(budget.next(retryable)).toEqual({ retry: false, reason: "attempts_exhausted" });
    const waited = new RetryBudget({ ...policy, maxAttempts: 10 }, () => 0.5, {
      attempts: 1,
      waitedMs: 9_900,
    });
    expect(waited.next(retryable)).toEqual({ retry: false, reason: "wait_budget_exhausted" });
  });
});
