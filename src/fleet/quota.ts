import type { Pool } from "pg";
import type { QuotaPort } from "../engine/quota-port.js";
import { queueScope } from "../journal/pg/quota.js";
import { pgQuotaPort } from "../session/shared-quota.js";

/**
 * A worker's sessions share their queue's quota (`harness queue quota NAME`, `queue:NAME` in the
 * fleet's database); like every shared quota it fails closed (session/shared-quota.ts).
 */
export function queueQuota(pool: Pool, queue: string, log: (line: string) => void): QuotaPort {
  return pgQuotaPort(pool, queueScope(queue), { hint: `harness queue quota ${queue} ...`, log });
}
