import pg from "pg";
import PgBoss from "pg-boss";
import type { JournalKey } from "../journal/key.js";
import { loadJournalKey } from "../journal/key-file.js";
import { ensurePgSchema } from "../journal/pg/schema.js";
import { type FleetTask, parseStoredTask, taskTag } from "./task.js";

/**
 * The queue of sessions, on pg-boss (PostgreSQL, no other service). pg-boss dispatches and
 * recovers jobs; harness's own journal stays the one record of what a session did: a job is only
 * "run session S", never a tool call. The queue's policy is `stately` with the session id as the
 * singleton key, so PostgreSQL itself (a unique index) holds at most one queued and one active job
 * per session; the lease (journal/pg/lease.ts) is what fences a worker's appends.
 *
 * harness_fleet_tasks holds each submitted task and where it stands:
 * - state: queued (waiting for a worker), running (a worker took it), done (the run ended);
 * - status: the run's status once done (verified, unverified, stopped, review_required, ...);
 * - worker / job_id: who runs it and under which job (the reaper re-queues exactly that job);
 * - workspace_dir / materialized_on: where a copied or cloned workspace was made, and on which
 *   worker's disk (host and work directory): no other worker can reach it;
 * - reaped_epoch: the last lease epoch the reaper (or a stopping worker) handed on, so each dead
 *   lease is handed on exactly once however many reapers run.
 */

export const QUEUE = "harness-sessions";
/**
 * Told (NOTIFY) whenever a job is queued, with pg-boss's schema as the payload (pools in other
 * schemas of the same database ignore it): idle workers fetch at once instead of at their next
 * poll. Only a wake-up: a worker that misses one still finds the job when it polls.
 */
export const QUEUED_CHANNEL = "harness_fleet_queued";

const DDL = `
CREATE TABLE IF NOT EXISTS harness_fleet_tasks (
  session_id text PRIMARY KEY,
  task jsonb NOT NULL,
  submitted_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done')),
  status text,
  worker text,
  job_id text,
  workspace_dir text,
  materialized_on text,
  requeues integer NOT NULL DEFAULT 0,
  reaped_epoch bigint
);
ALTER TABLE harness_fleet_tasks ADD COLUMN IF NOT EXISTS mac text;
`;
/**
 * Every session job: the session id as the singleton key (stately: at most one queued and one
 * active per session), no retries (a failed run is the session's outcome, and the reaper re-queues
 * a dead worker's session), and an expiry long enough never to matter: the lease decides liveness.
 */
const JOB = { retryLimit: 0, expireInSeconds: 23 * 3600 } as const;
/** Jobs per INSERT when a batch is submitted. */
const SUBMIT_CHUNK = 500;

const DDL_LOCK_KEY = 0x666c7474; // "fltt": concurrent first starts do not race on CREATE TABLE

export type TaskState = "queued" | "running" | "done";

export interface TaskRow {
  session: string;
  state: TaskState;
  status: string | null;
  worker: string | null;
  requeues: number;
  goal: string;
  submitted_at: string;
  updated_at: string;
}

export class FleetError extends Error {
  override readonly name = "FleetError";
}

/** A connection to the pool's database: the journal tables, the task table and the queue. */
export class FleetDatabase {
  private constructor(
    readonly pool: pg.Pool,
    readonly boss: PgBoss,
    /** pg-boss's schema: next to harness's tables (the URL's search_path), so pools stay apart. */
    readonly bossSchema: string,
    /** Signs submitted tasks and verifies them before they run (taskTag). */
    private readonly key: JournalKey,
  ) {}

  static async open(
    url: string,
    options: { maxConnections?: number; supervise?: boolean; key?: JournalKey } = {},
  ) {
    // The user's journal key (the one the sessions are recorded with), before anything connects.
    const key = options.key ?? loadJournalKey();
    const pool = new pg.Pool({ connectionString: url, max: options.maxConnections ?? 10 });
    // An idle connection's error (the server restarted) must not crash the process: the next
    // query fails and says so.
    pool.on("error", () => {});
    const bossSchema = await pool
      .query<{ schema: string | null }>("SELECT current_schema() AS schema")
      .then((result) => {
        const schema = result.rows[0]?.schema ?? "public";
        return schema === "public" ? "harness_pgboss" : `${schema}_pgboss`;
      })
      .catch(async (error: unknown) => {
        await pool.end().catch(() => {});
        throw new FleetError(`cannot connect to the database: ${(error as Error).message}`);
      });
    const boss = new PgBoss({
      connectionString: url,
      schema: bossSchema,
      max: 4,
      supervise: options.supervise ?? false,
      schedule: false,
      migrate: true,
    });
    boss.on("error", () => {});
    try {
      // Every harness process sets the database up one at a time (a session-level advisory lock
      // on one connection): pg-boss's migration and queue creation deadlock when run at once.
      const client = await pool.connect();
      try {
        await client.query("SELECT pg_advisory_lock($1)", [DDL_LOCK_KEY]);
        await ensurePgSchema(pool);
        await client.query(DDL);
        await boss.start();
        if (!(await boss.getQueue(QUEUE))) {
          await boss.createQueue(QUEUE, { name: QUEUE, policy: "stately", retryLimit: 0 });
        }
      } finally {
        await client.query("SELECT pg_advisory_unlock($1)", [DDL_LOCK_KEY]).catch(() => {});
        client.release();
      }
    } catch (error) {
      await boss.stop({ graceful: false, wait: false }).catch(() => {});
      await pool.end().catch(() => {});
      throw new FleetError(`cannot use the database: ${(error as Error).message}`);
    }
    return new FleetDatabase(pool, boss, bossSchema, key);
  }

  /**
   * Queue tasks: each becomes a task row and one job. A session id already submitted is refused
   * for the whole batch (nothing is queued), so a tasks file cannot half-run twice.
   */
  async submit(tasks: readonly FleetTask[]): Promise<void> {
    const ids = tasks.map((task) => task.session);
    const duplicate = ids.find((id, index) => ids.indexOf(id) !== index);
    if (duplicate) throw new FleetError(`session "${duplicate}" appears twice`);
    const client = await this.pool.connect();
    try {
      await client.query("BEGIN");
      const taken = await client.query<{ session_id: string }>(
        "SELECT session_id FROM harness_fleet_tasks WHERE session_id = ANY($1) UNION SELECT session_id FROM harness_sessions WHERE session_id = ANY($1)",
        [ids],
      );
      if (taken.rows[0])
        throw new FleetError(
          `session "${taken.rows[0].session_id}" already exists; choose another --session`,
        );
      for (const task of tasks) {
        await client.query("INSERT INTO harness_fleet_tasks (session_id, task, mac) VALUES ($1, $2, $3)", [
          task.session,
          JSON.stringify(task),
          taskTag(task, this.key),
        ]);
      }
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      if ((error as { code?: string }).code === "23505")
        throw new FleetError("a session in this batch was submitted at the same time by someone else");
      throw error;
    } finally {
      client.release();
    }
    // The jobs in one statement per chunk and one wake-up for them all, not two round trips a task.
    for (let start = 0; start < ids.length; start += SUBMIT_CHUNK) {
      await this.boss.insert(
        ids
          .slice(start, start + SUBMIT_CHUNK)
          .map((session) => ({ name: QUEUE, data: { session }, singletonKey: session, ...JOB })),
      );
    }
    await this.wakeWorkers();
  }

  /** One job for the session; a second one while one is already queued is a no-op (stately). */
  async enqueue(session: string): Promise<string | null> {
    const id = await this.boss.send(QUEUE, { session }, { singletonKey: session, ...JOB });
    await this.wakeWorkers();
    return id;
  }

  private async wakeWorkers(): Promise<void> {
    // A wake-up that fails costs only latency: the job is queued and the next poll finds it.
    await this.pool.query("SELECT pg_notify($1, $2)", [QUEUED_CHANNEL, this.bossSchema]).catch(() => {});
  }

  /**
   * Call `wake` whenever a job is queued in this pool, on a connection held for it (LISTEN).
   * Returns the function that stops listening. A lost connection is reported through `failed`
   * and not reopened: the workers then fall back to polling.
   */
  async onQueued(wake: () => void, failed: (error: Error) => void): Promise<() => Promise<void>> {
    const client = await this.pool.connect();
    let broken = false;
    client.on("notification", (message) => {
      if (message.channel === QUEUED_CHANNEL && message.payload === this.bossSchema) wake();
    });
    client.on("error", (error) => {
      broken = true;
      failed(error);
    });
    try {
      await client.query(`LISTEN ${QUEUED_CHANNEL}`);
    } catch (error) {
      client.release(true);
      throw error;
    }
    return async () => {
      if (!broken) await client.query(`UNLISTEN ${QUEUED_CHANNEL}`).catch(() => {});
      // Destroyed, not returned to the pool: nothing else should inherit its LISTEN.
      client.release(true);
    };
  }

  async task(session: string): Promise<
    | {
        task: FleetTask;
        state: TaskState;
        workspaceDir: string | null;
        materializedOn: string | null;
      }
    | undefined
  > {
    const result = await this.pool.query(
      "SELECT task, mac, state, workspace_dir, materialized_on FROM harness_fleet_tasks WHERE session_id = $1",
      [session],
    );
    const row = result.rows[0] as
      | {
          task: unknown;
          mac: string | null;
          state: TaskState;
          workspace_dir: string | null;
          materialized_on: string | null;
        }
      | undefined;
    if (!row) return undefined;
    const task = parseStoredTask(row.task);
    if (row.mac === null || row.mac !== taskTag(task, this.key)) {
      throw new FleetError(
        `task "${session}" does not verify under this journal key (changed in the database, queued with another key, or before tasks were signed); it is not run: submit it again`,
      );
    }
    return {
      task,
      state: row.state,
      workspaceDir: row.workspace_dir,
      materializedOn: row.materialized_on,
    };
  }

  /** Every task and where it stands, oldest first. */
  async status(): Promise<TaskRow[]> {
    const result = await this.pool.query(
      `SELECT session_id, state, status, worker, requeues, task->>'goal' AS goal,
              to_char(submitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS submitted_at,
              to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS updated_at
         FROM harness_fleet_tasks ORDER BY submitted_at, session_id`,
    );
    return result.rows.map((row) => ({
      session: row.session_id,
      state: row.state,
      status: row.status,
      worker: row.worker,
      requeues: row.requeues,
      goal: row.goal,
      submitted_at: row.submitted_at,
      updated_at: row.updated_at,
    }));
  }

  async close(): Promise<void> {
    await this.boss.stop({ graceful: false, wait: true, close: true }).catch(() => {});
    await this.pool.end().catch(() => {});
  }
}
