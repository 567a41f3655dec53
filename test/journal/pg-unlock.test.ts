import { spawn } from "node:child_process";
import { hostname } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { JournalKey } from "../../src/journal/key.js";
import { currentOwner, type LockOwner } from "../../src/journal/lock.js";
import { acquireLease } from "../../src/journal/pg/lease.js";
import { PgJournalStore } from "../../src/journal/pg/store.js";
import { unlockPgSession } from "../../src/journal/pg/writer-claim.js";
import type { JournalWriter } from "../../src/journal/store.js";
import { type TempPgSchema, tempPgSchema } from "../support/pg.js";
import { input, rejection } from "./contract.js";

/**
 * A PostgreSQL session whose writer crashed keeps its writer lock in its row: resume takes a
 * provably gone owner's over, and `harness unlock --database` clears it by the file store's rules
 * (never a live owner, another host's only with force, never under an unexpired lease).
 */

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  if (child.pid === undefined) throw new Error("no pid");
  return child.pid;
}

/** A session `s1` with one record whose writer is still open; its row then names `owner` instead. */
async function lockedSession(
  owner?: LockOwner,
): Promise<{ db: TempPgSchema; backend: PgJournalStore; writer: JournalWriter }> {
  const db = await tempPgSchema();
  cleanups.push(() => db.cleanup());
  const backend = new PgJournalStore(db.pool, { key: JournalKey.ephemeral() });
  const writer = await backend.openWriter("s1", { create: true });
  cleanups.push(() => writer.close().catch(() => undefined));
  await writer.append([input("one")]);
  if (owner)
    await db.pool.query("UPDATE harness_sessions SET writer = $2 WHERE session_id = $1", [
      "s1",
      JSON.stringify(owner),
    ]);
  return { db, backend, writer };
}

const writerOf = async (db: TempPgSchema) =>
  (await db.pool.query("SELECT writer, writer_token FROM harness_sessions WHERE session_id = 's1'")).rows[0];

describe("a PostgreSQL session's writer lock after a crash", () => {
  it("is taken over by resume when its owner is provably gone, and refused to a plain open", async () => {
    const owner = {
      pid: await deadPid(),
      host: hostname(),
      started_at: "2025-01-01T00:00:00.000Z",
      proc_start: null,
    };
    const { backend, writer } = await lockedSession(owner);
    const stale = await rejection(backend.openWriter("s1", { create: false }));
    expect(stale.code).toBe("STALE_LOCK");
    expect(stale.message).toContain("`harness unlock s1 --database URL`");
    const resumed = await backend.openWriter("s1", { create: false, recoverStaleLock: true });
    cleanups.push(() => resumed.close());
    expect(resumed.recoveredLock).toMatchObject({ owner, reason: `no process ${owner.pid} exists` });
    await resumed.append([input("two")]);
    // The crashed writer, were it somehow still there, can no longer append.
    expect((await rejection(writer.append([input("late")]))).code).toBe("LOCKED");
  });

  it("is cleared by unlock when its owner is gone; a plain open then succeeds", async () => {
    const owner = {
      pid: await deadPid(),
      host: hostname(),
      started_at: "2025-01-01T00:00:00.000Z",
      proc_start: null,
    };
    const { db, backend } = await lockedSession(owner);
    expect(await unlockPgSession(db.pool, "s1")).toMatchObject({
      outcome: "removed",
      forced: false,
      status: { state: "gone", owner },
    });
    expect(await writerOf(db)).toEqual({ writer: null, writer_token: null });
    expect(await unlockPgSession(db.pool, "s1")).toEqual({ outcome: "no_lock" });
    const next = await backend.openWriter("s1", { create: false });
    cleanups.push(() => next.close());
    await next.append([input("two")]);
  });

  it("never displaces a live owner, even with force", async () => {
    const { db, writer } = await lockedSession();
    const before = await writerOf(db);
    for (const force of [false, true]) {
      const refused = await unlockPgSession(db.pool, "s1", { force });
      expect(refused).toMatchObject({ outcome: "refused", status: { state: "alive" } });
      if (refused.outcome === "refused") expect(refused.message).toContain("open in another writer");
    }
    expect(await writerOf(db)).toEqual(before);
    await writer.append([input("still mine")]);
    // The live owner is this process, as recorded.
    expect(before.writer).toMatchObject({ pid: currentOwner(new Date()).pid, host: hostname() });
  });

  it("clears another host's lock only with force, and the writer it displaced is fenced", async () => {
    const owner = {
      pid: 4242,
      host: "another-host.invalid",
      started_at: "2025-01-01T00:00:00.000Z",
      proc_start: null,
    };
    const { db, writer } = await lockedSession(owner);
    const refused = await unlockPgSession(db.pool, "s1");
    expect(refused).toMatchObject({ outcome: "refused", status: { state: "unknown", owner } });
    if (refused.outcome === "refused")
      expect(refused.message).toContain("harness unlock s1 --database URL --force");
    expect((await writerOf(db)).writer).toEqual(owner);
    expect(await unlockPgSession(db.pool, "s1", { force: true })).toMatchObject({
      outcome: "removed",
      forced: true,
    });
    expect(await writerOf(db)).toEqual({ writer: null, writer_token: null });
    expect((await rejection(writer.append([input("late")]))).code).toBe("LOCKED");
  });

  it("refuses while a worker holds the session under an unexpired lease; says so for a session that does not exist", async () => {
    const owner = {
      pid: await deadPid(),
      host: hostname(),
      started_at: "2025-01-01T00:00:00.000Z",
      proc_start: null,
    };
    const { db } = await lockedSession(owner);
    const lease = await acquireLease(db.newPool(), "s1", "worker-a", 60_000, { renewEveryMs: 0 });
    cleanups.push(async () => lease?.release());
    const refused = await unlockPgSession(db.pool, "s1", { force: true });
    expect(refused).toMatchObject({ outcome: "refused" });
    if (refused.outcome === "refused")
      expect(refused.message).toContain("owned by worker worker-a under a lease");
    expect((await writerOf(db)).writer).toEqual(owner);
    expect((await rejection(unlockPgSession(db.pool, "nope"))).code).toBe("SESSION_NOT_FOUND");
  });
});
