import type { ClientBase, Pool } from "pg";

/** A pool, or one connection (inside a transaction the caller holds). */
type Db = Pool | ClientBase;

import { z } from "zod";

/*
 * Quotas shared by many processes (workers of a queue, sessions of a server identity), in the
 * same PostgreSQL as the leases: money, tokens and model requests per period, for one scope
 * (`queue:NAME`, `identity:NAME`). Each reservation is a single UPDATE whose WHERE says that what
 * is used plus the estimate stays within every limit, so PostgreSQL's row lock decides between
 * two workers racing for the last of it: the second re-reads the row the first committed and no
 * longer matches. A period that has ended starts over inside the same statement. The reply's
 * reported usage then settles the reservation (the difference given back, or charged).
 */

const DDL = `
CREATE TABLE IF NOT EXISTS harness_quotas (
  scope text PRIMARY KEY,
  period_ms bigint NOT NULL CHECK (period_ms > 0),
  period_start timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  limit_usd double precision CHECK (limit_usd >= 0),
  limit_tokens bigint CHECK (limit_tokens >= 0),
  limit_requests bigint CHECK (limit_requests >= 0),
  used_usd double precision NOT NULL DEFAULT 0,
  used_tokens bigint NOT NULL DEFAULT 0,
  used_requests bigint NOT NULL DEFAULT 0
);
`;
// Period starts are whole milliseconds (each later one a whole number of periods after the
// first), so the start a reservation read back as a JS date names its period exactly at settling.
const DDL_LOCK_KEY = 0x71756f74; // "quot": concurrent first starts do not race on CREATE TABLE

/** What a scope may spend per period; an absent limit is no limit. */
export interface QuotaLimits {
  periodMs: number;
  usd?: number;
  tokens?: number;
  requests?: number;
}

/** What one model request is expected (reserve) or reported (settle) to spend. */
export interface QuotaAmount {
  usd: number;
  tokens: number;
  requests: number;
}

/** A reservation held: settled against the period it was taken in. */
export interface QuotaReservation {
  scope: string;
  periodStart: string;
  estimate: QuotaAmount;
}

export type QuotaReserved =
  | { ok: true; reservation: QuotaReservation; left: Partial<QuotaAmount> }
  | { ok: false; reason: "no_quota" | "exceeded"; left?: Partial<QuotaAmount> };

const row = z.object({
  period_start: z.union([z.date(), z.string()]).transform((v) => (v instanceof Date ? v.toISOString() : v)),
  limit_usd: z.number().nullable(),
  limit_tokens: z.union([z.string(), z.number()]).nullable(),
  limit_requests: z.union([z.string(), z.number()]).nullable(),
  used_usd: z.number(),
  used_tokens: z.union([z.string(), z.number()]),
  used_requests: z.union([z.string(), z.number()]),
});

/** Create the quota table if it is missing (idempotent; safe from many workers at once). */
export async function ensureQuotaSchema(pool: Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock($1)", [DDL_LOCK_KEY]);
    await client.query(DDL);
    await client.query("COMMIT");
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/** Set a scope's limits (what it used this period is kept: lowering a limit never refunds). */
export async function configureQuota(pool: Pool, scope: string, limits: QuotaLimits): Promise<void> {
  await pool.query(
    `INSERT INTO harness_quotas (scope, period_ms, limit_usd, limit_tokens, limit_requests)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (scope) DO UPDATE SET period_ms = $2, limit_usd = $3, limit_tokens = $4, limit_requests = $5`,
    [scope, limits.periodMs, limits.usd ?? null, limits.tokens ?? null, limits.requests ?? null],
  );
}

// Whether the row's period has ended, and what it used in the period in force now: every
// expression reads only the target row, so a racer blocked on its lock re-evaluates them on the
// version the winner committed.
const ROLLED = "(now() >= q.period_start + q.period_ms * interval '1 millisecond')";
const used = (column: string) => `(CASE WHEN ${ROLLED} THEN 0 ELSE q.${column} END)`;
const NEW_START = `(q.period_start + floor(extract(epoch FROM now() - q.period_start) * 1000 / q.period_ms) * q.period_ms * interval '1 millisecond')`;

/**
 * Reserve `estimate` from `scope` in one atomic UPDATE ... WHERE (used + estimate within each
 * limit) RETURNING: it either holds the estimate or changes nothing.
 */
export async function reserveQuota(pool: Db, scope: string, estimate: QuotaAmount): Promise<QuotaReserved> {
  const result = await pool.query(
    `UPDATE harness_quotas AS q SET
       period_start = CASE WHEN ${ROLLED} THEN ${NEW_START} ELSE q.period_start END,
       used_usd = ${used("used_usd")} + $2,
       used_tokens = ${used("used_tokens")} + $3,
       used_requests = ${used("used_requests")} + $4
     WHERE q.scope = $1
       AND (q.limit_usd IS NULL OR ${used("used_usd")} + $2 <= q.limit_usd)
       AND (q.limit_tokens IS NULL OR ${used("used_tokens")} + $3 <= q.limit_tokens)
       AND (q.limit_requests IS NULL OR ${used("used_requests")} + $4 <= q.limit_requests)
     RETURNING q.period_start, q.limit_usd, q.limit_tokens, q.limit_requests, q.used_usd, q.used_tokens, q.used_requests`,
    [scope, estimate.usd, estimate.tokens, estimate.requests],
  );
  const reserved = result.rows[0];
  if (reserved !== undefined) {
    const parsed = row.parse(reserved);
    return {
      ok: true,
      reservation: { scope, periodStart: parsed.period_start, estimate },
      left: leftOf(parsed),
    };
  }
  const left = await quotaLeft(pool, scope);
  return left === undefined ? { ok: false, reason: "no_quota" } : { ok: false, reason: "exceeded", left };
}

/**
 * Settle a reservation with what the reply reported: the difference is given back (or charged)
 * in the period it was reserved in; a period that has since ended is not touched (then nothing
 * is said of what is left: undefined).
 */
export async function settleQuota(
  pool: Db,
  reservation: QuotaReservation,
  actual: QuotaAmount,
): Promise<Partial<QuotaAmount> | undefined> {
  const { estimate } = reservation;
  const result = await pool.query(
    `UPDATE harness_quotas SET
       used_usd = GREATEST(0, used_usd + $3),
       used_tokens = GREATEST(0, used_tokens + $4),
       used_requests = GREATEST(0, used_requests + $5)
     WHERE scope = $1 AND period_start = $2
     RETURNING period_start, limit_usd, limit_tokens, limit_requests, used_usd, used_tokens, used_requests`,
    [
      reservation.scope,
      reservation.periodStart,
      actual.usd - estimate.usd,
      actual.tokens - estimate.tokens,
      actual.requests - estimate.requests,
    ],
  );
  const settled = result.rows[0];
  return settled === undefined ? undefined : leftOf(row.parse(settled));
}

/** What is left of each limit in the period in force (undefined: the scope has no quota). */
export async function quotaLeft(pool: Db, scope: string): Promise<Partial<QuotaAmount> | undefined> {
  const result = await pool.query(
    `SELECT q.period_start, q.limit_usd, q.limit_tokens, q.limit_requests,
       ${used("used_usd")} AS used_usd, ${used("used_tokens")} AS used_tokens, ${used("used_requests")} AS used_requests
     FROM harness_quotas AS q WHERE q.scope = $1`,
    [scope],
  );
  if (result.rows[0] === undefined) return undefined;
  return leftOf(row.parse(result.rows[0]));
}

/** What is left of each limit a row has. */
function leftOf(r: z.infer<typeof row>): Partial<QuotaAmount> {
  const left: Partial<QuotaAmount> = {};
  if (r.limit_usd !== null) left.usd = r.limit_usd - r.used_usd;
  if (r.limit_tokens !== null) left.tokens = Number(r.limit_tokens) - Number(r.used_tokens);
  if (r.limit_requests !== null) left.requests = Number(r.limit_requests) - Number(r.used_requests);
  return left;
}

/** The scope of a worker queue's quota. */
export const queueScope = (queue: string) => `queue:${queue}`;

/** The scope of a server identity's quota. */
export const identityScope = (identity: string) => `identity:${identity}`;
