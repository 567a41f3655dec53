import type { Usage } from "../protocol/types.js";
import { costUsd } from "../providers/cost.js";
import type { RunSummary } from "./options.js";
import { type EngineRun, stop } from "./outcome.js";
import type { QuotaLeft, QuotaSpend } from "./quota-port.js";

/*
 * A money budget checked before the spend: each model request's cost is projected from its token
 * estimate at the profile's prices, with the whole reply reserve counted as output (the most the
 * reply may cost), and a request that would exceed what is left is never sent. The provider's
 * reported usage then settles it. Both are journaled, so `inspect` and a resume read the spend
 * from the journal: retries, compaction requests and children count like any request.
 */

/** What is left of the budget (negative when a settled reply cost more than projected). */
export function leftUsd(run: Pick<EngineRun, "options" | "state">): number | undefined {
  const budget = run.options.moneyBudget;
  return budget === undefined ? undefined : budget.maxCostUsd - run.state.costSpentUsd;
}

/**
 * Before request `step`/`attempt` of `inputTokens` (estimated) with `replyTokens` reserved:
 * journal the reservation, or stop the run (budget_exhausted) without sending it.
 */
export async function reserveMoney(
  run: EngineRun,
  request: { step: number; attempt: number; inputTokens: number; replyTokens: number },
): Promise<RunSummary | undefined> {
  const budget = run.options.moneyBudget;
  const left = leftUsd(run);
  if (budget === undefined || left === undefined) return reserveShared(run, request);
  const estimate = costUsd(
    { input_tokens: request.inputTokens, output_tokens: request.replyTokens, cached_tokens: 0 },
    budget.prices,
  );
  if (estimate > left) {
    return stop(
      run,
      "stopped",
      "budget_exhausted",
      `the next model request would cost up to $${estimate.toFixed(4)} (about ${request.inputTokens} input tokens and ` +
        `${request.replyTokens} reserved for the reply), more than the $${Math.max(0, left).toFixed(4)} left of ` +
        `--max-cost-usd ${budget.maxCostUsd}; it was not sent`,
    );
  }
  // The shared quota after the session's own budget's check, before its record: a refusal by
  // either leaves nothing reserved in the other.
  const shared = await reserveShared(run, request);
  if (shared) return shared;
  await run.record({
    type: "budget.reserved",
    data: { step: request.step, attempt: request.attempt, estimate_usd: estimate, left_usd: left },
  });
  return undefined;
}

/** After request `step`/`attempt`: its cost from the reported usage (none reported: nothing spent). */
export async function settleMoney(
  run: EngineRun,
  request: { step: number; attempt: number; usage: Usage | undefined },
): Promise<void> {
  await settleShared(run, request.usage);
  const budget = run.options.moneyBudget;
  if (budget === undefined) return;
  const usage = request.usage;
  const cost = costUsd(
    {
      input_tokens: usage?.input_tokens ?? 0,
      output_tokens: usage?.output_tokens ?? 0,
      cached_tokens: usage?.cached_tokens ?? 0,
    },
    budget.prices,
  );
  await run.record({
    type: "budget.settled",
    data: {
      step: request.step,
      attempt: request.attempt,
      cost_usd: cost,
      left_usd: budget.maxCostUsd - run.state.costSpentUsd - cost,
    },
  });
}

// The one reservation a run holds on its shared quota: its model requests go one at a time.
const held = new WeakMap<
  EngineRun,
  { step: number; attempt: number; settle(actual: QuotaSpend): Promise<QuotaLeft | undefined> }
>();

/**
 * Reserve the request on the shared quota (EngineOptions.quota), or stop the run without sending
 * it. Either way the journal says so (`quota.reserved` before the request is sent, or
 * `quota.refused` before the stop), so `inspect` shows what the session held of the quota.
 */
async function reserveShared(
  run: EngineRun,
  request: { step: number; attempt: number; inputTokens: number; replyTokens: number },
): Promise<RunSummary | undefined> {
  const quota = run.options.quota;
  if (quota === undefined) return undefined;
  const tokens = request.inputTokens + request.replyTokens;
  const usd =
    quota.prices === undefined
      ? 0
      : costUsd(
          { input_tokens: request.inputTokens, output_tokens: request.replyTokens, cached_tokens: 0 },
          quota.prices,
        );
  const estimate = { usd, tokens, requests: 1 };
  const hold = await quota.port.reserve(estimate);
  const at = { quota: quota.port.scope, step: request.step, attempt: request.attempt, ...estimate };
  if (!hold.ok) {
    await run.record({
      type: "quota.refused",
      data: { ...at, why: hold.why, ...(hold.left !== undefined ? { left: hold.left } : {}) },
    });
    // budget_exhausted like the session's own budget: what a caller does about it is the same
    // (wait, or raise the limit); the detail names the quota.
    return stop(
      run,
      "stopped",
      "budget_exhausted",
      `the next model request (about ${tokens} tokens with the reply's reserve) does not fit the quota ` +
        `${quota.port.scope}: ${hold.why}; it was not sent`,
    );
  }
  // Held before it is journaled: a failed append still settles it (the next request's, or never:
  // then the estimate stays charged, more counted, never less).
  held.set(run, { step: request.step, attempt: request.attempt, settle: hold.settle });
  await run.record({
    type: "quota.reserved",
    data: { ...at, ...(hold.left !== undefined ? { left: hold.left } : {}) },
  });
  return undefined;
}

/** Settle the held reservation with the reported usage (none reported: the request still counts). */
async function settleShared(run: EngineRun, usage: Usage | undefined): Promise<void> {
  const hold = held.get(run);
  const quota = run.options.quota;
  if (hold === undefined || quota === undefined) return;
  held.delete(run);
  const reported = {
    input_tokens: usage?.input_tokens ?? 0,
    output_tokens: usage?.output_tokens ?? 0,
    cached_tokens: usage?.cached_tokens ?? 0,
  };
  const actual = {
    usd: quota.prices === undefined ? 0 : costUsd(reported, quota.prices),
    tokens: reported.input_tokens + reported.output_tokens,
    requests: 1,
  };
  const left = await hold.settle(actual);
  await run.record({
    type: "quota.settled",
    data: {
      quota: quota.port.scope,
      step: hold.step,
      attempt: hold.attempt,
      ...actual,
      ...(left !== undefined ? { left } : {}),
    },
  });
}
