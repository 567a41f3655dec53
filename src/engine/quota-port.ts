import type { ModelPrices } from "../providers/config.js";

/*
 * A quota shared with other processes (a fleet queue's, a server identity's), seen by the engine
 * only through this port: each model request reserves its estimate before it is sent and settles
 * what the provider reported after. The door that fills it owns the storage (PostgreSQL for a
 * fleet); the engine never learns where the quota lives.
 */

/** What one model request is expected (reserve) or reported (settle) to spend. */
export interface QuotaSpend {
  usd: number;
  tokens: number;
  requests: number;
}

/** What a quota has left of each limit it has (a limit it does not have is absent). */
export type QuotaLeft = Partial<QuotaSpend>;

/**
 * A reservation held (settle it once: it resolves to what is left after, when the store says),
 * or why there was none (the request is not sent). `left` is the store's last word, for the
 * journal: what is left after holding the estimate, or when refused.
 */
export type QuotaHold =
  | { ok: true; left?: QuotaLeft; settle(actual: QuotaSpend): Promise<QuotaLeft | undefined> }
  | { ok: false; why: string; left?: QuotaLeft };

export interface QuotaPort {
  /** The quota's name in messages (`queue:NAME`, `identity:NAME`). */
  scope: string;
  reserve(estimate: QuotaSpend): Promise<QuotaHold>;
}

/** The port and the prices a request's money is estimated at (none: money is counted as 0). */
export interface EngineQuota {
  port: QuotaPort;
  prices?: ModelPrices;
}
