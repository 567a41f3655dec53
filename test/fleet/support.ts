import type { ChildProcess } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { FleetDatabase, type TaskRow } from "../../src/fleet/queue.js";
import { childEnv, startHarness, tempDir } from "../e2e/helpers.js";
import { TEST_DATABASE_URL, type TempPgSchema, tempPgSchema } from "../support/pg.js";

/**
 * A pool of real worker processes (the built CLI) on a fresh PostgreSQL schema. The scripted
 * model asks for one shell call that appends a line to effects.txt, then answers: each line in
 * effects.txt is one execution of a side effect.
 */
export const EFFECT_SCRIPT = `
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export default async function (messages) {
  const delay = Number(process.env.FLEET_MODEL_DELAY_MS ?? "0");
  if (delay > 0) await sleep(delay);
  if (!messages.some((message) => message.role === "tool")) {
    return { calls: [{ id: "effect", name: "shell", arguments: { command: "echo once >> effects.txt" } }] };
  }
  return { text: "appended" };
}
`;

export interface Pool {
  schema: TempPgSchema;
  dir: string;
  script: string;
  workers: ChildProcess[];
  logs: string[];
  startWorker(options?: {
    leaseMs?: number;
    concurrency?: number;
    env?: Record<string, string>;
  }): ChildProcess;
  db(): Promise<FleetDatabase>;
  waitUntil(done: (rows: TaskRow[]) => boolean, timeoutMs: number): Promise<TaskRow[]>;
  workspace(name: string): Promise<string>;
  close(): Promise<void>;
}

export async function startPool(): Promise<Pool> {
  const schema = await tempPgSchema();
  const dir = await tempDir("harness-fleet-");
  const script = join(dir, "effect.mjs");
  await writeFile(script, EFFECT_SCRIPT);
  const workers: ChildProcess[] = [];
  const logs: string[] = [];
  let db: FleetDatabase | undefined;
  const openDb = async () => {
    db ??= await FleetDatabase.open(schema.url, { maxConnections: 2 });
    return db;
  };
  return {
    schema,
    dir,
    script,
    workers,
    logs,
    startWorker(options = {}) {
      const index = workers.length;
      const child = startHarness(
        [
          "worker",
          "--database",
          schema.url,
          "--lease-ms",
          String(options.leaseMs ?? 1500),
          "--concurrency",
          String(options.concurrency ?? 1),
          "--work-dir",
          join(dir, `worker-${index}`),
        ],
        { env: { ...childEnv(), ...options.env } },
      );
      child.stderr?.on("data", (chunk: Buffer) => logs.push(`[w${index}] ${chunk.toString()}`));
      child.stdout?.resume();
      workers.push(child);
      return child;
    },
    db: openDb,
    async waitUntil(done, timeoutMs) {
      const fleet = await openDb();
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const rows = await fleet.status();
        if (done(rows)) return rows;
        if (Date.now() > deadline)
          throw new Error(
            `timed out; not done: ${JSON.stringify(rows.filter((row) => row.state !== "done"))}\n` +
              `live workers: ${workers
                .filter((w) => w.exitCode === null && w.signalCode === null)
                .map((w) => w.pid)
                .join(" ")}\n` +
              `worker logs:\n${logs.join("")}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
    async workspace(name) {
      const root = join(dir, "workspaces", name);
      await mkdir(root, { recursive: true });
      return root;
    },
    async close() {
      for (const child of workers) {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGCONT");
          child.kill("SIGKILL");
        }
      }
      await db?.close();
      if (process.env.HARNESS_FLEET_KEEP_SCHEMA) process.stderr.write(`kept schema ${schema.schema}\n`);
      else {
        await schema.cleanup();
        await dropBossSchema(schema);
      }
    },
  };
}

export async function effects(workspace: string): Promise<number> {
  const text = await readFile(join(workspace, "effects.txt"), "utf8").catch(() => "");
  return text.split("\n").filter((line) => line === "once").length;
}

export const allDone = (count: number) => (rows: TaskRow[]) =>
  rows.length === count && rows.every((row) => row.state === "done");

/** The pg-boss schema FleetDatabase makes next to a test schema is dropped with it. */
export async function dropBossSchema(schema: TempPgSchema): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema.schema}_pgboss CASCADE`);
  } finally {
    await client.end();
  }
}
