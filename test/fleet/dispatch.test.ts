import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { FleetDatabase } from "../../src/fleet/queue.js";
import type { FleetTask } from "../../src/fleet/task.js";
import { FleetWorker } from "../../src/fleet/worker.js";
import { type TempPgSchema, tempPgSchema } from "../support/pg.js";

/**
 * Dispatch latency: a worker whose polling interval is far longer than the test waits must still
 * pick a queued session up at once (NOTIFY), and fetch the next one as soon as a slot frees.
 * The launcher is a stand-in that records when each session started and ends at once.
 */
const POLL_SECONDS = 30;
let root: string;
let schema: TempPgSchema | undefined;
let worker: FleetWorker | undefined;
let db: FleetDatabase | undefined;

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "harness-dispatch-")));
  // Never the user's own key.
  process.env.HARNESS_KEY_FILE = join(root, "journal.key");
});
afterEach(async () => {
  await worker?.stop();
  await db?.close();
  await schema?.cleanup();
  worker = db = schema = undefined;
  rmSync(root, { recursive: true, force: true });
});

const task = (session: string): FleetTask => ({
  session,
  goal: "nothing",
  workspace: { shared: root },
  options: {},
});

async function startWorker(started: Map<string, number>): Promise<void> {
  schema = await tempPgSchema();
  db = await FleetDatabase.open(schema.url, { maxConnections: 2 });
  worker = await FleetWorker.start({
    database: schema.url,
    concurrency: 1,
    leaseMs: 5_000,
    workDir: join(root, "work"),
    pollSeconds: POLL_SECONDS,
    launch: async ({ task }) => {
      started.set(task.session, Date.now());
      return { status: "verified" };
    },
  });
}

async function until(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("a worker's dispatch", () => {
  it("picks a session queued while it is idle up at once, not at its next poll", async () => {
    const started = new Map<string, number>();
    await startWorker(started);
    // The worker's first fetches found nothing: it now waits out its 30 s interval.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const queuedAt = Date.now();
    await db?.submit([task("idle-1")]);
    await until(() => started.has("idle-1"), 10_000);
    // 50 ms on an idle machine; generous here for a loaded one, far below the 30 s poll.
    expect((started.get("idle-1") as number) - queuedAt).toBeLessThan(2_000);
  }, 30_000);

  it("runs queued sessions back to back: a freed slot fetches the next at once", async () => {
    const started = new Map<string, number>();
    await startWorker(started);
    const tasks = Array.from({ length: 8 }, (_, index) => task(`burst-${index}`));
    const queuedAt = Date.now();
    await db?.submit(tasks);
    await until(() => started.size === tasks.length, 20_000);
    const rows = await db?.status();
    expect(rows?.filter((row) => row.state === "done" && row.status === "verified")).toHaveLength(8);
    // Paced by the polling interval this would take 8 x 30 s.
    expect(Math.max(...started.values()) - queuedAt).toBeLessThan(8_000);
  }, 30_000);
});
