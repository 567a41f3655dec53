import { afterEach, describe, expect, it } from "vitest";
import { PgJournalStore } from "../../src/journal/pg/store.js";
import { harness, removeTempDirs } from "../e2e/helpers.js";
import { allDone, effects, type Pool, startPool } from "./support.js";

let pool: Pool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
  await removeTempDirs();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function submit(pool: Pool, session: string, workspace: string): Promise<void> {
  const result = await harness([
    "queue",
    "submit",
    "--database",
    pool.schema.url,
    "--session",
    session,
    "--workspace",
    workspace,
    "--script",
    pool.script,
    "--shell",
    "allow",
    "--accept",
    "test -f effects.txt",
    "append a line",
  ]);
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
}

async function waitForLog(pool: Pool, text: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pool.logs.join("").includes(text)) {
    if (Date.now() > deadline) throw new Error(`no "${text}" in worker logs:\n${pool.logs.join("")}`);
    await sleep(50);
  }
}

describe("workers over one PostgreSQL database", () => {
  it("two workers racing for one session: exactly one takes it and runs its effect", async () => {
    pool = await startPool();
    const workspace = await pool.workspace("race");
    pool.startWorker({ concurrency: 2 });
    pool.startWorker({ concurrency: 2 });
    await submit(pool, "race-1", workspace);
    const [row] = await pool.waitUntil(allDone(1), 20_000);
    expect(row?.status).toBe("verified");
    expect(await effects(workspace)).toBe(1);
    const taken = pool.logs.join("").match(/session race-1: taken/g) ?? [];
    expect(taken).toHaveLength(1);
    const records = await new PgJournalStore(pool.schema.pool).read("race-1");
    expect(records.filter((record) => record.type === "session.started")).toHaveLength(1);
    expect(records.filter((record) => record.type === "lease.acquired")).toHaveLength(0);
  });

  it("a worker paused past its lease is fenced out: the new owner runs the call once, the old one never does", async () => {
    pool = await startPool();
    const workspace = await pool.workspace("paused");
    // Worker A's model takes 4 s to answer; it is paused meanwhile, past its 1 s lease.
    const a = pool.startWorker({ leaseMs: 1000, env: { FLEET_MODEL_DELAY_MS: "4000" } });
    await submit(pool, "paused-1", workspace);
    await waitForLog(pool, "session paused-1: taken (lease epoch 1)", 15_000);
    await sleep(300);
    a.kill("SIGSTOP");
    // Worker B's reaper finds the expired lease and queues the session again; B takes it over.
    pool.startWorker({ leaseMs: 1000 });
    const [row] = await pool.waitUntil(allDone(1), 25_000);
    expect(row).toMatchObject({ status: "verified", requeues: 1 });
    expect(await effects(workspace)).toBe(1);

    // A wakes up with the model's reply in hand (a call to run): its append is refused.
    a.kill("SIGCONT");
    await waitForLog(pool, "session paused-1: lease lost", 15_000);
    await sleep(1500);
    expect(await effects(workspace)).toBe(1);

    const records = await new PgJournalStore(pool.schema.pool).read("paused-1");
    const takeover = records.find((record) => record.type === "lease.acquired");
    expect(takeover?.data).toMatchObject({ epoch: 2, previous: { epoch: 1 } });
    expect(records.filter((record) => record.type === "tool.started")).toHaveLength(1);
    expect(records.at(-1)?.type).toBe("run.finished");
    const status = (await pool.db()).status();
    expect((await status)[0]).toMatchObject({ state: "done", status: "verified" });
  });
});
