import { afterEach, describe, expect, it } from "vitest";
import { FleetDatabase, QUEUE } from "../../src/fleet/queue.js";
import { reapExpired } from "../../src/fleet/reaper.js";
import type { FleetTask } from "../../src/fleet/task.js";
import { acquireLease } from "../../src/journal/pg/lease.js";
import { type TempPgSchema, tempPgSchema } from "../support/pg.js";
import { dropBossSchema } from "./support.js";

let schema: TempPgSchema | undefined;
const opened: FleetDatabase[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
  if (schema) {
    await schema.cleanup();
    await dropBossSchema(schema);
  }
  schema = undefined;
});

async function open(url: string): Promise<FleetDatabase> {
  const db = await FleetDatabase.open(url, { maxConnections: 3 });
  opened.push(db);
  return db;
}

const task = (session: string): FleetTask => ({
  session,
  goal: "anything",
  workspace: { shared: "/nonexistent" },
  options: {},
});

async function jobs(db: FleetDatabase, session: string): Promise<{ state: string }[]> {
  const result = await db.pool.query<{ state: string }>(
    `SELECT state FROM ${db.bossSchema}.job WHERE name = $1 AND singleton_key = $2 ORDER BY created_on`,
    [QUEUE, session],
  );
  return result.rows;
}

describe("the reaper", () => {
  it("hands a dead worker's session on exactly once when two reapers run at the same time", async () => {
    schema = await tempPgSchema();
    const [a, b] = [await open(schema.url), await open(schema.url)];
    await a.submit([task("dead-1")]);
    // A worker took the job and the lease, then died: its job stays active, its lease expires.
    const [job] = await a.boss.fetch<{ session: string }>(QUEUE);
    expect(job?.data.session).toBe("dead-1");
    const lease = await acquireLease(a.pool, "dead-1", "dead-worker", 50, { renewEveryMs: 0 });
    expect(lease?.epoch).toBe(1);
    await a.pool.query(
      "UPDATE harness_fleet_tasks SET state = 'running', worker = 'dead-worker' WHERE session_id = 'dead-1'",
    );
    await new Promise((resolve) => setTimeout(resolve, 120));

    const [first, second] = await Promise.all([reapExpired(a), reapExpired(b)]);
    expect([...first, ...second]).toEqual(["dead-1"]);
    const [row] = (await a.status()).filter((each) => each.session === "dead-1");
    expect(row).toMatchObject({ state: "queued", requeues: 1, worker: null });
    // The dead worker's job failed, one new job waits: never two active or two queued.
    expect((await jobs(a, "dead-1")).map((each) => each.state).sort()).toEqual(["created", "failed"]);

    // Running again finds nothing new to hand on: the same expired epoch is handed on once.
    expect(await Promise.all([reapExpired(a), reapExpired(b)])).toEqual([[], []]);
  });

  it("queues again, once, a session whose worker died after taking the job but before the lease", async () => {
    schema = await tempPgSchema();
    const [a, b] = [await open(schema.url), await open(schema.url)];
    await a.submit([task("early-1")]);
    const [job] = await a.boss.fetch<{ session: string }>(QUEUE);
    expect(job?.data.session).toBe("early-1");
    // Younger than the grace time: a live worker may be about to take the lease.
    expect(await reapExpired(a, 60_000)).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 30));
    const [first, second] = await Promise.all([reapExpired(a, 10), reapExpired(b, 10)]);
    expect(new Set([...first, ...second])).toEqual(new Set(["early-1"]));
    expect((await jobs(a, "early-1")).map((each) => each.state).sort()).toEqual(["created", "failed"]);
  });

  it("gives a job again to a session left queued with none (its job failed before any lease)", async () => {
    schema = await tempPgSchema();
    const [a, b] = [await open(schema.url), await open(schema.url)];
    await a.submit([task("jobless-1")]);
    const [job] = await a.boss.fetch<{ session: string }>(QUEUE);
    await a.boss.fail(QUEUE, job?.id ?? "");
    await new Promise((resolve) => setTimeout(resolve, 30));
    const [first, second] = await Promise.all([reapExpired(a, 10), reapExpired(b, 10)]);
    expect(new Set([...first, ...second])).toEqual(new Set(["jobless-1"]));
    expect((await jobs(a, "jobless-1")).map((each) => each.state).sort()).toEqual(["created", "failed"]);
  });

  it("leaves a finished session alone even though its released lease has expired", async () => {
    schema = await tempPgSchema();
    const db = await open(schema.url);
    await db.submit([task("finished-1")]);
    const lease = await acquireLease(db.pool, "finished-1", "w", 60_000, { renewEveryMs: 0 });
    await db.pool.query(
      "UPDATE harness_fleet_tasks SET state = 'done', status = 'verified' WHERE session_id = 'finished-1'",
    );
    await lease?.release();
    expect(await reapExpired(db)).toEqual([]);
    expect((await db.status())[0]).toMatchObject({ state: "done", status: "verified", requeues: 0 });
  });
});

describe("the queue", () => {
  it("holds at most one queued job per session, however many submit it at once", async () => {
    schema = await tempPgSchema();
    const db = await open(schema.url);
    await db.submit([task("once-1")]);
    const again = await Promise.all([db.enqueue("once-1"), db.enqueue("once-1"), db.enqueue("once-1")]);
    expect(again).toEqual([null, null, null]);
    expect(await jobs(db, "once-1")).toEqual([{ state: "created" }]);
  });

  it("refuses a session id that was already submitted, queuing nothing of the batch", async () => {
    schema = await tempPgSchema();
    const db = await open(schema.url);
    await db.submit([task("taken-1")]);
    await expect(db.submit([task("new-1"), task("taken-1")])).rejects.toThrow(
      'session "taken-1" already exists; choose another --session',
    );
    expect((await db.status()).map((row) => row.session)).toEqual(["taken-1"]);
  });
});
