import {
  type RetryableFailure,
  RetryBudget,
  type RetryDecision,
  type RetryPolicy,
} from "../shared/retry-policy.js";
import type { Limits } from "./options.js";
import type { EngineRun } from "./outcome.js";

/** The run's limits as the retry policy model requests run under (full jitter: many clients, one server). */
export function modelRetryPolicy(limits: Limits): RetryPolicy {
  return {
    maxAttempts: limits.maxModelAttempts,
    maxTotalWaitMs: limits.modelRetryMaxTotalMs,
    baseMs: limits.modelRetryBaseMs,
    maxMs: limits.modelRetryMaxMs,
    jitter: "full",
  };
}

/**
 * Whether a failed model request (an ordinary one or a compaction's) is sent again, and after
 * how long. The step's budget is what the journal says was used since the last reply, so a
 * resume goes on with it rather than refilling it.
 */
export function nextModelRetry(run: EngineRun, failure: RetryableFailure): RetryDecision {
  const used = { attempts: run.state.retriesSinceReply, waitedMs: run.state.retryWaitSinceReply };
  return new RetryBudget(modelRetryPolicy(run.limits), run.options.random ?? Math.random, used).next(failure);
}
