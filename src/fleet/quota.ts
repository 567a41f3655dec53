import type { Pool } from "pg";
import type { QuotaPort } from "../engine/quota-port.js";
import { queueScope, reserveQuota, settleQuota } from "../journal/pg/quota.js";

/*
 * A worker's sessions share their queue's quota (`harness queue quota NAME`): the engine's port
 * over the `harness_quotas` row of `queue:NAME` in the fleet's database. It fails closed: a
 * worker told to use a quota that is not configured, or a database that does not answer, sends
 * no request. A settle that fails leaves the estimate charged (more counted, never less).
 */
export function queueQuota(pool: Pool, queue: string, log: (line: string) => void): QuotaPort {
  const scope = queueScope(queue);
  return {
    scope,
    async reserve(estimate) {
      const reserved = await reserveQuota(pool, scope, estimate).catch((error: Error) => ({
        ok: false as const,
        reason: "unreachable" as const,
        message: error.message,
      }));
      if (reserved.ok)
        return {
          ok: true,
          settle: (actual) =>
            settleQuota(pool, reserved.reservation, actual).catch((error: Error) =>
              log(
                `quota ${scope}: the reservation could not be settled (${error.message}); it stays charged`,
              ),
            ),
        };
      if (reserved.reason === "no_quota")
        return { ok: false, why: `no quota ${scope} is configured (harness queue quota ${queue} ...)` };
      if (reserved.reason === "unreachable")
        return { ok: false, why: `the quota could not be read (${reserved.message})` };
      return { ok: false, why: `what is left this period is ${leftText(reserved.left)}` };
    },
  };
}

function leftText(left: { usd?: number; tokens?: number; requests?: number } | undefined): string {
  const parts: string[] = [];
  if (left?.usd !== undefined) parts.push(`$${Math.max(0, left.usd).toFixed(4)}`);
  if (left?.tokens !== undefined) parts.push(`${Math.max(0, left.tokens)} tokens`);
  if (left?.requests !== undefined) parts.push(`${Math.max(0, left.requests)} requests`);
  return parts.length > 0 ? parts.join(", ") : "nothing";
}
