import type { ModelPrices } from "./config.js";

/** Token counts as the journal's fold adds them up (SessionState.usage). */
export interface UsageTotals {
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
}

/**
 * The cost in US dollars of `usage` at the profile's `prices`: the one place a cost is computed
 * (run summary, --json, chat footer). Providers report input tokens including the ones read from
 * cache (normalized in the providers), so those are taken out and charged at the cached price;
 * reasoning tokens are part of the output tokens.
 */
export function costUsd(usage: UsageTotals, prices: ModelPrices): number {
  const cached = Math.min(usage.cached_tokens, usage.input_tokens);
  const fresh = usage.input_tokens - cached;
  const cachedPrice = prices.cached_input_per_mtok ?? prices.input_per_mtok;
  return (
    (fresh * prices.input_per_mtok + cached * cachedPrice + usage.output_tokens * prices.output_per_mtok) /
    1_000_000
  );
}

/** How a cost is written for people: dollars with four decimals (`$0.0123`). */
export function formatCost(usd: number): string {
  return `$${usd.toFixed(4)}`;
}
