import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  configureQuota,
  ensureQuotaSchema,
  queueScope,
  quotaLeft,
  reserveQuota,
  settleQuota,
} from "../../src/journal/pg/quota.js";
import { type TempPgSchema, tempPgSchema } from "../support/pg.js";

/*
 * A queue's quota in PostgreSQL: each reservation one atomic UPDATE ... WHERE within the limits
 * RETURNING, so two workers (two pools, as two processes have) racing for the last of it cannot
 * both get it.
 */

let schema: TempPgSchema;
beforeAll(async () => {
  schema = await tempPgSchema();
  await ensureQuotaSchema(schema.pool);
}, 60_000);
afterAll(async () => schema?.cleanup());

const HOUR = 60 * 60 * 1000;
const spend = (usd: number, tokens = 0, requests = 1) => ({ usd, tokens, requests });

describe("queue quotas", () => {
  it("two workers racing for the last of the quota: the one blocked on the row lock re-reads it and loses", async () => {
    const scope = queueScope("race-locked");
    await configureQuota(schema.pool, scope, { periodMs: HOUR, usd: 1 });
    const other = schema.newPool();
    const first = await schema.pool.connect();
    try {
      await first.query("BEGIN");
      const won = await reserveQuota(first, scope, spend(0.6));
      expect(won.ok).toBe(true);
      // The second worker's UPDATE waits on the row the first holds, then sees what it committed.
      let settled = false;
      const racing = reserveQuota(other, scope, spend(0.6)).finally(() => {
        settled = true;
      });
      await waitForLockWait(scope);
      expect(settled).toBe(false);
      await first.query("COMMIT");
      const lost = await racing;
      expect(lost).toMatchObject({ ok: false, reason: "exceeded" });
    } finally {
      first.release();
    }
    const left = await quotaLeft(schema.pool, scope);
    expect(left?.usd).toBeCloseTo(0.4, 10);
  });

  it("many concurrent reservations from two pools: exactly as many win as the quota holds", async () => {
    const scope = queueScope("race-many");
    await configureQuota(schema.pool, scope, { periodMs: HOUR, requests: 3 });
    const pools = [schema.pool, schema.newPool()];
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => reserveQuota(pools[i % 2]!, scope, spend(0, 0, 1))),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(3);
    expect(await quotaLeft(schema.pool, scope)).toEqual({ requests: 0 });
  });

  it("settling gives back what the reply did not spend; a new period starts over", async () => {
    const scope = queueScope("settle");
    await configureQuota(schema.pool, scope, { periodMs: HOUR, usd: 1, tokens: 10_000 });
    const held = await reserveQuota(schema.pool, scope, spend(0.9, 9_000));
    if (!held.ok) throw new Error("expected the reservation to be held");
    expect(await reserveQuota(schema.pool, scope, spend(0.2, 100))).toMatchObject({ ok: false });
    await settleQuota(schema.pool, held.reservation, spend(0.3, 2_000));
    const left = await quotaLeft(schema.pool, scope);
    expect(left?.usd).toBeCloseTo(0.7, 10);
    expect(left?.tokens).toBe(8_000);
    expect((await reserveQuota(schema.pool, scope, spend(0.6, 100))).ok).toBe(true);
    // The period ended (moved back two hours): what was used no longer counts.
    await schema.pool.query(
      "UPDATE harness_quotas SET period_start = period_start - interval '2 hours' WHERE scope = $1",
      [scope],
    );
    expect((await reserveQuota(schema.pool, scope, spend(0.95, 9_500))).ok).toBe(true);
    expect((await quotaLeft(schema.pool, scope))?.usd).toBeCloseTo(0.05, 10);
  });

  it("a scope without a quota is said so, never silently allowed", async () => {
    expect(await reserveQuota(schema.pool, queueScope("none"), spend(0.1))).toEqual({
      ok: false,
      reason: "no_quota",
    });
  });
});

/** Until a backend waits on a lock (the second worker's UPDATE blocked on the quota row). */
async function waitForLockWait(scope: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await schema.pool.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%harness_quotas%' AND datname = current_database()",
    );
    if ((rows[0] as { n: number }).n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no reservation on ${scope} waited for the row lock`);
}
