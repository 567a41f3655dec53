import type { Pool } from "pg";
import type { QuotaPort } from "../engine/quota-port.js";
import { reserveQuota, settleQuota } from "../journal/pg/quota.js";

/*
 * The engine's QuotaPort over one `harness_quotas` row (a fleet queue's, a server identity's).
 * It fails closed: a scope nobody configured, or a database that does not answer, refuses the
 * request. A settle that fails leaves the estimate charged (more counted, never less).
 */
export function pgQuotaPort(
  pool: Pool,
  scope: string,
  options: {
    /** How to configure the scope, for the refusal's message. */ hint: string;
    log(line: string): void;
  },
): QuotaPort {
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
          left: reserved.left,
          settle: (actual) =>
            settleQuota(pool, reserved.reservation, actual).catch((error: Error) => {
              options.log(
                `quota ${scope}: the reservation could not be settled (${error.message}); it stays charged`,
              );
              return undefined;
            }),
        };
      if (reserved.reason === "no_quota")
        return { ok: false, why: `no quota ${scope} is configured (${options.hint})` };
      if (reserved.reason === "unreachable")
        return { ok: false, why: `the quota could not be read (${reserved.message})` };
      return {
        ok: false,
        why: `what is left this period is ${leftText(reserved.left)}`,
        ...(reserved.left !== undefined ? { left: reserved.left } : {}),
      };
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
