// Fleet throughput: sessions per second through the PostgreSQL queue with 1 worker and with 4,
// on sessions whose model replies each take 200 ms (a scripted model with a delay: one reply with a
// write_file call, one final answer); and dispatch overhead: one worker on 200 queued sessions
// whose replies are instant, against the same sessions run one after another in this process
// without the queue (issue 35, part 7). Needs HARNESS_TEST_DATABASE_URL (a PostgreSQL URL, as the
// PostgreSQL append bench and the tests use; npm test starts its own); the
// bench makes its own schema there and drops it.
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { launchSession } from "../src/fleet/launcher.js";
import { FleetDatabase } from "../src/fleet/queue.js";
import type { FleetTask } from "../src/fleet/task.js";
import { FleetWorker } from "../src/fleet/worker.js";
import { PgJournalStore } from "../src/journal/pg/store.js";
import { type BenchRow, round } from "./stats.js";

const SESSIONS = 32;
const REPLY_MS = 200;
const INSTANT_SESSIONS = 200;

const script = (replyMs: number) => `
export default async function (messages) {
  if (${replyMs} > 0) await new Promise((resolve) => setTimeout(resolve, ${replyMs}));
  if (!messages.some((message) => message.role === "tool"))
    return { calls: [{ id: "w", name: "write_file", arguments: { path: "out.txt", content: "done\\n" } }] };
  return { text: "written" };
}
`;

export async function benchFleet(): Promise<BenchRow[]> {
  const base = process.env.HARNESS_TEST_DATABASE_URL;
  if (!base) {
    return [
      {
        name: "fleet throughput",
        value: Number.NaN,
        unit: "",
        note: "skipped: set HARNESS_TEST_DATABASE_URL to a PostgreSQL URL (npm test starts an embedded one for the tests only)",
      },
    ];
  }
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-fleet-")));
  // Never the user's own key or config.
  process.env.HARNESS_KEY_FILE = join(root, "journal.key");
  process.env.HARNESS_CONFIG = join(root, "config.json");
  writeFileSync(process.env.HARNESS_CONFIG, "{}\n");
  const slow = join(root, "model.mjs");
  writeFileSync(slow, script(REPLY_MS));
  const instant = join(root, "instant.mjs");
  writeFileSync(instant, script(0));
  try {
    const direct = await throughput(base, root, instant, 0, INSTANT_SESSIONS);
    const queued = await throughput(base, root, instant, 1, INSTANT_SESSIONS);
    const one = await throughput(base, root, slow, 1, SESSIONS);
    const four = await throughput(base, root, slow, 4, SESSIONS);
    return [
      {
        name: `fleet: ${INSTANT_SESSIONS} instant sessions, run directly`,
        value: round(direct, 2),
        unit: "sessions/s",
        note: "one process, one after another, no queue",
      },
      {
        name: `fleet: ${INSTANT_SESSIONS} instant sessions, 1 worker`,
        value: round(queued, 2),
        unit: "sessions/s",
      },
      {
        name: "fleet: 1 worker vs direct (instant replies)",
        value: round(queued / direct, 2),
        unit: "x",
        note: "goal >= 0.8",
      },
      { name: `fleet: ${SESSIONS} sessions, 1 worker`, value: round(one, 2), unit: "sessions/s" },
      { name: `fleet: ${SESSIONS} sessions, 4 workers`, value: round(four, 2), unit: "sessions/s" },
      { name: "fleet: speed-up 4 vs 1 workers", value: round(four / one, 2), unit: "x", note: "goal >= 3" },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** Sessions per second through `workers` workers; 0 workers: run directly in this process. */
async function throughput(
  base: string,
  root: string,
  script: string,
  workers: number,
  sessions: number,
): Promise<number> {
  const schema = `harness_bench_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const url = new URL(base);
  url.searchParams.set("options", `-c search_path=${schema}`);
  const running: FleetWorker[] = [];
  const db = await FleetDatabase.open(url.toString(), { maxConnections: 2 });
  try {
    const tasks: FleetTask[] = [];
    for (let index = 0; index < sessions; index += 1) {
      const workspace = join(root, `${schema}-${index}`);
      mkdirSync(workspace);
      tasks.push({
        session: `bench-${index}`,
        goal: "write out.txt",
        workspace: { shared: workspace },
        options: { script, write: "allow" },
      });
    }
    for (let index = 0; index < workers; index += 1) {
      running.push(
        await FleetWorker.start({
          database: url.toString(),
          concurrency: 1,
          leaseMs: 10_000,
          workDir: join(root, `work-${index}`),
          launch: launchSession(() => {}),
        }),
      );
    }
    if (workers === 0) {
      const launch = launchSession(() => {});
      const store = new PgJournalStore(db.pool);
      const never = new AbortController().signal;
      const started = performance.now();
      for (const task of tasks) {
        const root = (task.workspace as { shared: string }).shared;
        const { status } = await launch({ task, root, store, signal: never, lost: never });
        if (status !== "unverified" && status !== "verified") throw new Error(`${task.session}: ${status}`);
      }
      return sessions / ((performance.now() - started) / 1000);
    }
    const started = performance.now();
    await db.submit(tasks);
    // Watched with one small row a poll: reading every task's row 50 times a second would take
    // CPU and database time from the worker being measured, in this process and the server.
    for (;;) {
      const { rows } = await db.pool.query<{ left: string }>(
        "SELECT count(*) AS left FROM harness_fleet_tasks WHERE state <> 'done'",
      );
      if (Number(rows[0]?.left) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const elapsed = performance.now() - started;
    const failed = (await db.status()).filter(
      (row) => row.status !== "unverified" && row.status !== "verified",
    );
    if (failed.length > 0) throw new Error(`sessions did not finish: ${JSON.stringify(failed)}`);
    return sessions / (elapsed / 1000);
  } finally {
    for (const worker of running) await worker.stop();
    await db.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.query(`DROP SCHEMA IF EXISTS ${schema}_pgboss CASCADE`);
    await admin.end();
  }
}
