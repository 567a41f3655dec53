// Fleet throughput: sessions per second through the PostgreSQL queue with 1 worker and with 4,
// on sessions whose model replies each take 200 ms (a scripted model with a delay: one reply with a
// write_file call, one final answer). Needs HARNESS_TEST_DATABASE_URL (a PostgreSQL URL, as the
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
import { type BenchRow, round } from "./stats.js";

const SESSIONS = 32;
const REPLY_MS = 200;

const SCRIPT = `
export default async function (messages) {
  await new Promise((resolve) => setTimeout(resolve, ${REPLY_MS}));
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
  const script = join(root, "model.mjs");
  writeFileSync(script, SCRIPT);
  try {
    const one = await throughput(base, root, script, 1);
    const four = await throughput(base, root, script, 4);
    return [
      { name: `fleet: ${SESSIONS} sessions, 1 worker`, value: round(one, 2), unit: "sessions/s" },
      { name: `fleet: ${SESSIONS} sessions, 4 workers`, value: round(four, 2), unit: "sessions/s" },
      { name: "fleet: speed-up 4 vs 1 workers", value: round(four / one, 2), unit: "x", note: "goal >= 3" },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function throughput(base: string, root: string, script: string, workers: number): Promise<number> {
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
    for (let index = 0; index < SESSIONS; index += 1) {
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
    const started = performance.now();
    await db.submit(tasks);
    for (;;) {
      const rows = await db.status();
      if (rows.every((row) => row.state === "done")) {
        const failed = rows.filter((row) => row.status !== "unverified" && row.status !== "verified");
        if (failed.length > 0) throw new Error(`sessions did not finish: ${JSON.stringify(failed)}`);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return SESSIONS / ((performance.now() - started) / 1000);
  } finally {
    for (const worker of running) await worker.stop();
    await db.close();
    await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.query(`DROP SCHEMA IF EXISTS ${schema}_pgboss CASCADE`);
    await admin.end();
  }
}
