import { spawnSync } from "node:child_process";
import { hostname } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { JournalKey } from "../../src/journal/key.js";
import { acquireLease, expiredLeases, type Lease, leaseOf } from "../../src/journal/pg/lease.js";
import { leasedStore } from "../../src/journal/pg/leased.js";
import { PgJournalStore } from "../../src/journal/pg/store.js";
import type { JournalWriter } from "../../src/journal/store.js";
import { event } from "../../src/journal/vocabulary.js";
import { type TempPgSchema, tempPgSchema } from "../support/pg.js";
import { input, rejection } from "./contract.js";

let db: TempPgSchema;
let key: JournalKey;
const cleanups: (() => Promise<unknown>)[] = [];

beforeEach(async () => {
  db = await tempPgSchema();
  key = JournalKey.ephemeral();
});
afterEach(async () => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  await db.cleanup();
});

/** A backend on its own pool: what one worker process has. */
function worker(): PgJournalStore {
  return new PgJournalStore(db.newPool(), { key });
}

function track<T extends JournalWriter | Lease>(value: T): T {
  cleanups.push(() => ("append" in value ? value.close() : value.release()));
  return value;
}

async function texts(sessionId: string): Promise<unknown[]> {
  return (await worker().read(sessionId)).map((record) => record.data);
}

/** Take a lease that is not renewed by a timer, so a test decides when it runs out. */
async function lease(session: string, owner: string, leaseMs: number): Promise<Lease> {
  const taken = await acquireLease(db.newPool(), session, owner, leaseMs, { renewEveryMs: 0 });
  if (!taken) throw new Error(`${owner} could not take the lease on ${session}`);
  return track(taken);
}

describe("PostgreSQL journal: single writer", () => {
  it("lets exactly one of two writers racing to open a session win; the other gets LOCKED and writes nothing", async () => {
    const attempts = await Promise.allSettled([
      worker().openWriter("s1", { create: true }),
      worker().openWriter("s1", { create: true }),
    ]);
    const won = attempts.filter((a) => a.status === "fulfilled");
    const lost = attempts.filter((a) => a.status === "rejected");
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toMatchObject({ code: "LOCKED" });
    const writer = track((won[0] as PromiseFulfilledResult<JournalWriter>).value);
    await writer.append([input("winner")]);
    expect(await texts("s1")).toEqual([{ text: "winner" }]);
  });

  it("refuses an append whose expected seq is no longer the session's, writing nothing", async () => {
    const writer = track(await worker().openWriter("s1", { create: true }));
    await writer.append([input("one")]);
    // Another party extends the session behind this writer's back (bypassing the writer lock).
    await db.pool.query("UPDATE harness_sessions SET next_seq = 2 WHERE session_id = 's1'");
    const refused = await rejection(writer.append([input("two")]));
    expect(refused.code).toBe("CORRUPT");
    expect(refused.message).toContain("expected 1");
    const rows = await db.pool.query("SELECT seq FROM harness_records WHERE session_id = 's1'");
    expect(rows.rowCount).toBe(1);
  });

  it("takes over a writer lock whose process is provably gone only when asked, and reports whose it was", async () => {
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid;
    const writer = await worker().openWriter("s1", { create: true });
    await writer.append([input("before the crash")]);
    const stale = { pid: dead, host: hostname(), started_at: "2025-03-01T12:00:00.000Z", proc_start: "1" };
    await db.pool.query("UPDATE harness_sessions SET writer = $1 WHERE session_id = 's1'", [
      JSON.stringify(stale),
    ]);
    const refused = await rejection(worker().openWriter("s1", { create: false }));
    expect(refused.code).toBe("STALE_LOCK");
    expect(refused.message).toContain(`pid ${dead}`);
    const recovering = track(await worker().openWriter("s1", { create: false, recoverStaleLock: true }));
    expect(recovering.recoveredLock?.owner).toEqual(stale);
    await recovering.append([input("after")]);
    // The crashed writer's handle (its claim replaced) appends nothing.
    expect((await rejection(writer.append([input("ghost")]))).code).toBe("LOCKED");
    expect(await texts("s1")).toEqual([{ text: "before the crash" }, { text: "after" }]);
  });
});

describe("PostgreSQL journal: leases and fencing", () => {
  it("fences a writer whose lease was taken over: its append is refused with FENCED and writes nothing", async () => {
    const first = await lease("s1", "worker-a", 1000);
    expect(first).toMatchObject({ epoch: 1, previous: null });
    const a = track(await worker().openWriter("s1", { create: true, lease: first }));
    await a.append([input("a: intent")]);
    // Not before it expires, by the database clock.
    expect(await acquireLease(db.newPool(), "s1", "worker-b", 300, { renewEveryMs: 0 })).toBeNull();
    await delay(1100);
    const second = await lease("s1", "worker-b", 5000);
    expect(second).toMatchObject({ epoch: 2, previous: { owner: "worker-a", epoch: 1 } });
    const b = track(await worker().openWriter("s1", { create: false, lease: second }));
    expect(b.length).toBe(1);
    await b.append([
      event("lease.acquired", { epoch: 2, owner: "worker-b", previous: { owner: "worker-a", epoch: 1 } }),
    ]);

    const fenced = await rejection(a.append([input("a: would start a tool call")]));
    expect(fenced.code).toBe("FENCED");
    expect(fenced.message).toContain("worker-b took the session over (epoch 2)");
    // The fenced writer stays fenced, and its lease knows it is lost.
    expect((await rejection(a.append([input("a: again")]))).code).toBe("FENCED");
    expect(await first.renew()).toBe(false);
    expect(first.lost.aborted).toBe(true);

    await b.append([input("b: continues")]);
    const records = await worker().read("s1");
    expect(records.map((r) => r.type)).toEqual(["user.input", "lease.acquired", "user.input"]);
    expect(records.map((r) => r.seq)).toEqual([0, 1, 2]);
    expect(records[1]?.data).toEqual({
      epoch: 2,
      owner: "worker-b",
      previous: { owner: "worker-a", epoch: 1 },
    });
  });

  it("fences a writer whose lease expired even when nobody took it over yet", async () => {
    const held = await lease("s1", "worker-a", 1000);
    const a = track(await worker().openWriter("s1", { create: true, lease: held }));
    await a.append([input("in time")]);
    await delay(1100);
    const fenced = await rejection(a.append([input("too late")]));
    expect(fenced.code).toBe("FENCED");
    expect(fenced.message).toContain("expired");
    expect(await texts("s1")).toEqual([{ text: "in time" }]);
  });

  it("refuses to open a writer with a lease that is no longer held", async () => {
    const old = await lease("s1", "worker-a", 100);
    await delay(200);
    await lease("s1", "worker-b", 5000);
    expect((await rejection(worker().openWriter("s1", { create: true, lease: old }))).code).toBe("FENCED");
    expect(await worker().exists("s1")).toBe(false);
  });

  it("keeps a writer without a lease out of a leased session, and a lease holder displaces a plain writer", async () => {
    const plain = await worker().openWriter("s1", { create: true });
    await plain.append([input("plain")]);
    const held = await lease("s1", "worker-a", 5000);
    const leased = track(await worker().openWriter("s1", { create: false, lease: held }));
    expect((await rejection(plain.append([input("plain again")]))).code).toBe("LOCKED");
    const refused = await rejection(worker().openWriter("s1", { create: false }));
    expect(refused.code).toBe("LOCKED");
    expect(refused.message).toContain("worker worker-a under a lease (epoch 1");
    await leased.append([input("leased")]);
    expect(await texts("s1")).toEqual([{ text: "plain" }, { text: "leased" }]);
  });

  it("decides expiry by the database clock, not the worker's", async () => {
    const held = await lease("s1", "worker-a", 60_000);
    const { rows } = await db.pool.query<{ now: Date }>("SELECT now()");
    const row = await leaseOf(db.pool, "s1");
    expect(row).toMatchObject({ owner: "worker-a", epoch: 1, expired: false });
    const granted = row!.expiresAt.getTime() - rows[0]!.now.getTime();
    expect(granted).toBeGreaterThan(59_000);
    expect(granted).toBeLessThanOrEqual(60_000);
    // A worker whose own clock runs a day ahead still cannot take an unexpired lease.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 86_400_000 });
    expect(await acquireLease(db.newPool(), "s1", "worker-b", 1000, { renewEveryMs: 0 })).toBeNull();
    expect(await held.renew()).toBe(true);
    expect(await expiredLeases(db.pool)).toEqual([]);
  });

  it("lets exactly one of several concurrent takeovers of an expired lease win, with epoch + 1", async () => {
    await lease("s1", "dead-worker", 50);
    await delay(120);
    expect(await expiredLeases(db.pool)).toEqual([{ session: "s1", owner: "dead-worker", epoch: 1 }]);
    const owners = ["reaper-1", "reaper-2", "reaper-3", "reaper-4"];
    const results = await Promise.all(
      owners.map((owner) => acquireLease(db.newPool(), "s1", owner, 5000, { renewEveryMs: 0 })),
    );
    const winners = results.filter((r): r is Lease => r !== null);
    for (const won of winners) track(won);
    expect(winners).toHaveLength(1);
    expect(winners[0]).toMatchObject({ epoch: 2, previous: { owner: "dead-worker", epoch: 1 } });
    expect(await leaseOf(db.pool, "s1")).toMatchObject({
      owner: winners[0]!.owner,
      epoch: 2,
      expired: false,
    });
  });

  it("lets exactly one of several concurrent first acquisitions win", async () => {
    const results = await Promise.all(
      ["w1", "w2", "w3"].map((owner) =>
        acquireLease(db.newPool(), "fresh", owner, 5000, { renewEveryMs: 0 }),
      ),
    );
    const winners = results.filter((r): r is Lease => r !== null);
    for (const won of winners) track(won);
    expect(winners.map((w) => w.epoch)).toEqual([1]);
  });

  it("hands a released lease on at once, one epoch higher", async () => {
    const first = await lease("s1", "worker-a", 60_000);
    await first.release();
    const next = await lease("s1", "worker-b", 60_000);
    expect(next).toMatchObject({ epoch: 2, previous: { owner: "worker-a", epoch: 1 } });
  });

  it("renews while held, and aborts `lost` when a renewal finds the lease taken", async () => {
    const held = await acquireLease(db.newPool(), "s1", "worker-a", 1000, { renewEveryMs: 100 });
    track(held!);
    await delay(1500);
    // Renewed by its timer: still its own, well past the first expiry.
    expect(held!.lost.aborted).toBe(false);
    expect(await acquireLease(db.newPool(), "s1", "worker-b", 300, { renewEveryMs: 0 })).toBeNull();
    // Someone forces a takeover in the table; the next renewal notices.
    await db.pool.query("UPDATE harness_leases SET owner = 'worker-b', epoch = 2 WHERE session_id = 's1'");
    await delay(400);
    expect(held!.lost.aborted).toBe(true);
    expect(String(held!.lost.reason)).toContain("expired or was taken over");
  });

  it("aborts `lost` when the process could not renew in time (paused past its lease)", async () => {
    const held = await acquireLease(db.newPool(), "s1", "worker-a", 150, { renewEveryMs: 30 });
    track(held!);
    // Block this process's event loop past the lease, as SIGSTOP would.
    const until = performance.now() + 250;
    while (performance.now() < until) {}
    await delay(80);
    expect(held!.lost.aborted).toBe(true);
    expect(String(held!.lost.reason)).toMatch(
      /no renewal succeeded within the lease time|expired or was taken over/,
    );
  });
});

describe("PostgreSQL journal: round trips", () => {
  it("an append under a lease is one round trip: one statement, no BEGIN/COMMIT around it", async () => {
    const held = await lease("s1", "worker-a", 5000);
    const writer = track(await worker().openWriter("s1", { create: true, lease: held }));
    // Every statement any pool sends goes through a client's query.
    const sent = vi.spyOn(pg.Client.prototype, "query");
    await writer.append([input("one"), input("two")]);
    await writer.append([input("three")]);
    expect(sent).toHaveBeenCalledTimes(2);
    sent.mockRestore();
    const records = await worker().read("s1");
    expect(records.map((r) => r.data)).toEqual([{ text: "one" }, { text: "two" }, { text: "three" }]);
    expect(records.map((r) => r.seq)).toEqual([0, 1, 2]);
    const { rows } = await db.pool.query("SELECT next_seq FROM harness_sessions WHERE session_id = 's1'");
    expect(Number(rows[0].next_seq)).toBe(3);
  });
});

describe("PostgreSQL journal: tampering with rows", () => {
  async function seeded(): Promise<void> {
    const writer = await worker().openWriter("s1", { create: true });
    await writer.append([input("one"), input("two"), input("three")]);
    await writer.close();
  }

  it("refuses a record whose stored line was edited in place (TAMPERED)", async () => {
    await seeded();
    await db.pool.query(
      "UPDATE harness_records SET line = replace(line, '\"two\"', '\"TWO\"') WHERE session_id = 's1' AND seq = 1",
    );
    const refused = await rejection(worker().read("s1"));
    expect(refused.code).toBe("TAMPERED");
    expect(refused.message).toContain("record seq 1 was modified");
    expect((await rejection(worker().openWriter("s1", { create: false }))).code).toBe("TAMPERED");
  });

  it("refuses a journal with a record deleted, or rows whose seq disagrees with their record (CORRUPT)", async () => {
    await seeded();
    await db.pool.query("DELETE FROM harness_records WHERE session_id = 's1' AND seq = 1");
    expect((await rejection(worker().read("s1"))).code).toBe("CORRUPT");
    await db.pool.query("UPDATE harness_records SET seq = 1 WHERE session_id = 's1' AND seq = 2");
    const swapped = await rejection(worker().read("s1"));
    expect(swapped.code).toBe("CORRUPT");
  });
});

describe("PostgreSQL journal: an unreachable database", () => {
  it("reports IO naming PostgreSQL, not a driver stack", async () => {
    const { default: pg } = await import("pg");
    const pool = new pg.Pool({
      connectionString: "postgres://nobody@127.0.0.1:1/none",
      connectionTimeoutMillis: 2000,
    });
    cleanups.push(() => pool.end());
    const refused = await rejection(new PgJournalStore(pool, { key }).read("s1"));
    expect(refused.code).toBe("IO");
    expect(refused.message).toContain("cannot read the journal in PostgreSQL");
  });
});

describe("PostgreSQL journal: the backend a worker hands the engine", () => {
  it("journals lease.acquired when it opens a session that has records, and fences every writer it opens", async () => {
    const first = await lease("s1", "worker-a", 60_000);
    const a = track(await leasedStore(worker(), first).openWriter("s1", { create: true }));
    // A new session: nothing before the engine's own first record.
    expect(a.length).toBe(0);
    await a.append([input("a: intent")]);
    await a.close();
    await first.release();
    const second = await lease("s1", "worker-b", 60_000);
    const b = track(await leasedStore(worker(), second).openWriter("s1", { create: false }));
    expect((await b.readAll()).map((r) => [r.type, r.data])).toEqual([
      ["user.input", { text: "a: intent" }],
      ["lease.acquired", { epoch: 2, owner: "worker-b", previous: { owner: "worker-a", epoch: 1 } }],
    ]);
    // Taken over again behind its back: the writer it opened is fenced.
    await db.pool.query("UPDATE harness_leases SET owner = 'worker-c', epoch = 3 WHERE session_id = 's1'");
    expect((await rejection(b.append([input("b: late")]))).code).toBe("FENCED");
    expect((await worker().read("s1")).map((r) => r.type)).toEqual(["user.input", "lease.acquired"]);
  });
});
