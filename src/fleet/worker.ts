import { stat } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import type { Pool } from "pg";
import type PgBoss from "pg-boss";
import { acquireLease, type Lease } from "../journal/pg/lease.js";
import { leasedStore } from "../journal/pg/leased.js";
import { PgJournalStore } from "../journal/pg/store.js";
import { JournalError, type JournalStore } from "../journal/store.js";
import { stopForLostWorkspace } from "../session/operations/stop-lost-workspace.js";
import { FleetDatabase, QUEUE } from "./queue.js";
import { reapExpired } from "./reaper.js";
import type { FleetTask } from "./task.js";
import { isShared, materialize } from "./workspace.js";

/**
 * A worker: takes session jobs from the queue, owns each session through a lease, runs it with
 * the engine over the PostgreSQL journal, and renews the lease while it works. When the lease is
 * lost (expired while the process was paused, or taken over), the run's signal aborts: the
 * engine stops and kills its process trees, and every append the worker might still attempt is
 * refused by the epoch fence (FENCED), so a call it had not started is never started.
 */

/** What the embedder (the CLI) runs: one session, with its setup built as `harness run` builds it. */
export type SessionLauncher = (request: {
  task: FleetTask;
  /** The workspace directory on this worker. */
  root: string;
  /** The journal, every writer opened under this worker's lease. */
  store: JournalStore;
  /** Aborted when the worker stops or the lease is lost: stop at the next safe point. */
  signal: AbortSignal;
  /** Aborted when the lease is lost: kill the session's process trees now. */
  lost: AbortSignal;
  /** The fleet's database (the queue's quota lives there). */
  database?: Pool;
}) => Promise<{ status: string }>;

export interface WorkerOptions {
  database: string;
  concurrency: number;
  leaseMs: number;
  /** Where this worker materializes copied and cloned workspaces (its own disk). */
  workDir: string;
  launch: SessionLauncher;
  log?: (line: string) => void;
  /** How often the reaper looks for expired leases (default: the lease time). */
  reapEveryMs?: number;
  /**
   * How often an idle worker polls the queue (pg-boss's minimum is 0.5 s). Only the fallback: a
   * queued job wakes the worker through NOTIFY, and a slot that frees fetches at once.
   */
  pollSeconds?: number;
}

export class FleetWorker {
  /** This process's lease owner name: unique per worker process, readable in `queue status`. */
  readonly id = `${hostname()}:${process.pid}:${Math.random().toString(16).slice(2, 8)}`;
  /** Where this worker's materialized workspaces live: another worker cannot reach them. */
  readonly disk: string;
  private readonly stopping = new AbortController();
  private readonly running = new Set<Promise<unknown>>();
  private reaper: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;

  private constructor(
    private readonly db: FleetDatabase,
    private readonly options: WorkerOptions,
  ) {
    this.disk = `${hostname()}:${path.resolve(options.workDir)}`;
  }

  static async start(options: WorkerOptions): Promise<FleetWorker> {
    const db = await FleetDatabase.open(options.database, {
      maxConnections: options.concurrency * 2 + 4,
      supervise: true,
    });
    const worker = new FleetWorker(db, options);
    const pollingIntervalSeconds = options.pollSeconds ?? 0.5;
    // One fetch loop per slot: pg-boss hands each loop one job at a time. A loop waits out the
    // polling interval after a fetch unless it is notified: it is after each job it ran (the slot
    // is free, and more may be queued) and whenever a job is queued (NOTIFY), so dispatch is not
    // paced by the interval.
    const slots: string[] = [];
    for (let slot = 0; slot < options.concurrency; slot += 1) {
      let id: string | undefined;
      id = await db.boss.work<{ session: string }>(
        QUEUE,
        { batchSize: 1, pollingIntervalSeconds },
        async (jobs) => {
          try {
            await worker.track(worker.handle(jobs));
          } finally {
            if (id !== undefined) db.boss.notifyWorker(id);
          }
        },
      );
      slots.push(id);
    }
    try {
      worker.unlisten = await db.onQueued(
        () => {
          for (const id of slots) db.boss.notifyWorker(id);
        },
        (error) =>
          worker.log(
            `queue notifications lost (${error.message}); polling every ${pollingIntervalSeconds} s`,
          ),
      );
    } catch (error) {
      worker.log(
        `queue notifications unavailable (${(error as Error).message}); polling every ${pollingIntervalSeconds} s`,
      );
    }
    const every = options.reapEveryMs ?? options.leaseMs;
    worker.reaper = setInterval(() => {
      void reapExpired(db, options.leaseMs * 2).catch((error: unknown) =>
        worker.log(`reaper: ${(error as Error).message}`),
      );
    }, every);
    worker.log(
      `worker ${worker.id} started (concurrency ${options.concurrency}, lease ${options.leaseMs} ms)`,
    );
    return worker;
  }

  /** Stop taking jobs; sessions in progress stop at their next safe point and are queued again. */
  async stop(): Promise<void> {
    clearInterval(this.reaper);
    this.stopping.abort(new Error("the worker is stopping"));
    await this.unlisten?.().catch(() => {});
    await this.db.boss.offWork(QUEUE).catch(() => {});
    await Promise.allSettled([...this.running]);
    await this.db.close();
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.running.add(work);
    return work.finally(() => this.running.delete(work));
  }

  private async handle(jobs: PgBoss.Job<{ session: string }>[]): Promise<void> {
    for (const job of jobs) {
      // A job that fails before its session's lease was taken leaves the session queued with no
      // job: the reaper gives it a new one after the grace time.
      await this.runJob(job.id, job.data.session).catch((error: unknown) => {
        this.log(`session ${job.data.session}: not started: ${(error as Error).message}`);
      });
    }
  }

  private async runJob(jobId: string, session: string): Promise<void> {
    if (this.stopping.signal.aborted) {
      await this.db.enqueue(session);
      return;
    }
    const found = await this.db.task(session);
    if (!found || found.state === "done") return;
    const lease = await acquireLease(this.db.pool, session, this.id, this.options.leaseMs);
    // A live worker holds it: that worker runs the session (a dead one's lease expires and the
    // reaper queues the session again).
    if (!lease) return;
    try {
      await this.db.pool.query(
        "UPDATE harness_fleet_tasks SET state = 'running', worker = $2, job_id = $3, updated_at = now() WHERE session_id = $1 AND state <> 'done'",
        [session, this.id, jobId],
      );
      this.log(`session ${session}: taken (lease epoch ${lease.epoch})`);
      const status = await this.runLeased(found, lease);
      if (status === undefined) {
        if (lease.lost.aborted)
          this.log(`session ${session}: lease lost; stopped (${String(lease.lost.reason)})`);
        return;
      }
      await this.finish(session, status);
      this.log(`session ${session}: ${status}`);
    } catch (error) {
      // Lost the lease: the engine was stopped (its writer closed, its process trees killed) or an
      // append was refused. The new owner runs the session; nothing here is recorded.
      if (lease.lost.aborted || (error instanceof JournalError && error.code === "FENCED")) {
        this.log(`session ${session}: lease lost; stopped without appending (${(error as Error).message})`);
        return;
      }
      this.log(`session ${session}: failed: ${(error as Error).message}`);
      await this.finish(session, "failed");
    } finally {
      // Off the dispatch path: the slot fetches its next job while the release is on its way
      // (the task row already says where the session stands; stop() waits for it).
      void this.track(lease.release().catch(() => {}));
    }
  }

  /** Run the session under the lease; undefined when the worker stopped or lost the lease. */
  private async runLeased(
    found: NonNullable<Awaited<ReturnType<FleetDatabase["task"]>>>,
    lease: Lease,
  ): Promise<string | undefined> {
    const { task } = found;
    const journal = new PgJournalStore(this.db.pool);
    const store = leasedStore(journal, lease);
    // Asked only where the answer matters (a workspace of this worker's own): a shared one is the
    // same directory whether or not the session has started.
    const started = async () =>
      (await journal.exists(task.session)) && (await journal.read(task.session)).length > 0;
    const root = await this.workspaceFor(found, started);
    if (root === undefined) {
      // A started session is never run again from a fresh copy: a person reviews it.
      await stopForLostWorkspace(store, task.session, found.materializedOn);
      return "review_required";
    }
    const signal = AbortSignal.any([lease.lost, this.stopping.signal]);
    const outcome = await this.options.launch({
      task,
      root,
      store,
      signal,
      lost: lease.lost,
      database: this.db.pool,
    });
    if (lease.lost.aborted) return undefined;
    if (this.stopping.signal.aborted && outcome.status === "cancelled") {
      // A graceful stop: hand the session on at once (the reaper skips this epoch).
      await this.db.pool.query(
        "UPDATE harness_fleet_tasks SET state = 'queued', worker = NULL, reaped_epoch = $2, updated_at = now() WHERE session_id = $1 AND worker = $3",
        [task.session, lease.epoch, this.id],
      );
      await lease.release();
      await this.db.enqueue(task.session);
      return undefined;
    }
    return outcome.status;
  }

  /**
   * The session's workspace on this worker, or undefined when it existed only on another
   * worker's disk: a started session is never re-run from scratch in a fresh copy.
   */
  private async workspaceFor(
    found: NonNullable<Awaited<ReturnType<FleetDatabase["task"]>>>,
    started: () => Promise<boolean>,
  ): Promise<string | undefined> {
    const { task } = found;
    if (isShared(task.workspace)) return materialize(task.workspace, "");
    const target = path.join(path.resolve(this.options.workDir), task.session);
    // Only the directory this worker makes for the session is reused: the row's path is not
    // authenticated, and one written into the database (a home directory) would be where the
    // session's writes, shell commands and acceptance checks land.
    if (found.workspaceDir === target && found.materializedOn === this.disk) {
      if (await stat(target).catch(() => undefined)) return target;
    }
    if (found.materializedOn !== null || (await started())) return undefined;
    const root = await materialize(task.workspace, target, this.stopping.signal);
    await this.db.pool.query(
      "UPDATE harness_fleet_tasks SET workspace_dir = $2, materialized_on = $3 WHERE session_id = $1",
      [task.session, root, this.disk],
    );
    return root;
  }

  private async finish(session: string, status: string): Promise<void> {
    // Only while this worker still owns the task: a worker that was taken over reports nothing.
    await this.db.pool.query(
      "UPDATE harness_fleet_tasks SET state = 'done', status = $2, updated_at = now() WHERE session_id = $1 AND worker = $3",
      [session, status, this.id],
    );
  }
}
