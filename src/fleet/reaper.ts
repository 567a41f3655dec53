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
export async function reapExpired(db: FleetDatabase, graceMs = 60_000): Promise<string[]> {
  const requeued = await reapUnleasedJobs(db, graceMs);
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
  return [...new Set(requeued)];
}

/**
 * Jobs lost without a lease to show for it. A worker that died after taking a job but before
 * taking its session's lease leaves an active job and no lease at all: such a job, older than
 * `graceMs`, on a session that is not done and has no live lease, is failed (the UPDATE is the
 * compare-and-set: of reapers running at once, only one sees the job still active). And a session
 * that is not done, has no live lease and no waiting or active job (its job failed before the
 * lease was taken, e.g. the database was unreachable) gets a job again; the stately queue keeps
 * that to one however many reapers do it.
 */
async function reapUnleasedJobs(db: FleetDatabase, graceMs: number): Promise<string[]> {
  const failed = await db.pool.query<{ session: string }>(
    `UPDATE ${db.bossSchema}.job AS job
        SET state = 'failed', completed_on = now(), output = '{"reason": "its worker died before taking the lease"}'::jsonb
      WHERE job.name = $1 AND job.state = 'active' AND job.started_on < now() - $2 * interval '1 millisecond'
        AND EXISTS (SELECT 1 FROM harness_fleet_tasks task WHERE task.session_id = job.singleton_key AND task.state <> 'done')
        AND NOT EXISTS (SELECT 1 FROM harness_leases lease WHERE lease.session_id = job.singleton_key AND lease.expires_at > now())
      RETURNING job.singleton_key AS session`,
    [QUEUE, graceMs],
  );
  const jobless = await db.pool.query<{ session: string }>(
    `SELECT task.session_id AS session FROM harness_fleet_tasks task
      WHERE task.state <> 'done' AND task.updated_at < now() - $2 * interval '1 millisecond'
        AND NOT EXISTS (SELECT 1 FROM harness_leases lease WHERE lease.session_id = task.session_id AND lease.expires_at > now())
        AND NOT EXISTS (SELECT 1 FROM ${db.bossSchema}.job job
                         WHERE job.name = $1 AND job.singleton_key = task.session_id AND job.state IN ('created', 'retry', 'active'))`,
    [QUEUE, graceMs],
  );
  const sessions = [...new Set([...failed.rows, ...jobless.rows].map((row) => row.session))];
  for (const session of sessions) await db.enqueue(session);
  return sessions;
}
