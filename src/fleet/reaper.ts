import { expiredLeases } from "../journal/pg/lease.js";
import { type FleetDatabase, QUEUE } from "./queue.js";

/**
 * Dead workers are found by their leases: a lease that expired (by the database clock) on a
 * session that is not done belongs to a worker that stopped renewing it. Its session is queued
 * again; the next worker takes the lease (epoch + 1), which fences the old one out for good.
 *
 * Safe to run from every worker at once: handing on is a compare-and-set on the task row
 * (`reaped_epoch` below the expired epoch), so exactly one reaper wins each expired lease; the
 * queue's stately policy would also drop a second queued job for the same session.
 */
export async function reapExpired(db: FleetDatabase): Promise<string[]> {
  const requeued: string[] = [];
  for (const lease of await expiredLeases(db.pool)) {
    const won = await db.pool.query(
      `UPDATE harness_fleet_tasks
          SET state = 'queued', worker = NULL, reaped_epoch = $2, requeues = requeues + 1, updated_at = now()
        WHERE session_id = $1 AND state <> 'done' AND (reaped_epoch IS NULL OR reaped_epoch < $2)`,
      [lease.session, lease.epoch],
    );
    if (won.rowCount !== 1) continue;
    // The dead worker's job is still active in pg-boss (it never completed it): fail it, so the
    // session's new job may become active (the queue allows one active job per session).
    const active = await db.pool.query<{ id: string }>(
      `SELECT id FROM ${db.bossSchema}.job WHERE name = $1 AND singleton_key = $2 AND state = 'active'`,
      [QUEUE, lease.session],
    );
    for (const { id } of active.rows) await db.boss.fail(QUEUE, id, { reason: "its worker's lease expired" });
    await db.enqueue(lease.session);
    requeued.push(lease.session);
  }
  return requeued;
}
