import { randomUUID } from "node:crypto";
import type { Pool, PoolClient } from "pg";
import type { JsonObject } from "../../shared/json.js";
import { ownerLiveness, parseProcessOwner } from "../../shared/process-owner.js";
import { type LockOwner, type LockStatus, lockHeldError, type UnlockResult } from "../lock.js";
import { parentNotFound, parentSessionId } from "../session-path.js";
import { JournalError, type OpenWriterOptions } from "../store.js";
import type { Lease } from "./lease.js";
import { inTransaction } from "./schema.js";

/** The session row's writer lock, as this writer took it. */
export interface WriterClaim {
  /** Random; every append checks that the session row still carries it. */
  token: string;
  /** The provably stale writer lock this one replaced (resume journals it as `lock.recovered`). */
  recovered: { owner: LockOwner; reason: string } | undefined;
}

/**
 * In the opening transaction: take the session's writer lock (creating the session if asked).
 * Without a lease this is the file store's rule: a live holder is refused (LOCKED), a provably gone
 * one is taken over only when asked (STALE_LOCK otherwise), and a session a worker holds under an
 * unexpired lease is refused too. With a lease, the lease is the proof of ownership: it must still
 * be current, and it displaces whatever writer lock is there (that writer's next append is refused).
 */
export async function claimWriter(
  client: PoolClient,
  sessionId: string,
  owner: LockOwner,
  options: OpenWriterOptions & { lease?: Lease },
): Promise<WriterClaim> {
  if (options.lease) await checkLeaseHeld(client, options.lease);
  else await refuseLeased(client, sessionId);
  const current = await lockSessionRow(client, sessionId, options.create);
  let recovered: WriterClaim["recovered"];
  if (current.writer_token !== null && !options.lease) {
    const status = writerStatus(current.writer);
    if (status.state !== "gone" || options.recoverStaleLock !== true)
      throw lockHeldError(sessionId, status, "database");
    recovered = { owner: status.owner, reason: status.reason };
  }
  const token = randomUUID();
  await client.query("UPDATE harness_sessions SET writer = $2, writer_token = $3 WHERE session_id = $1", [
    sessionId,
    JSON.stringify(owner),
    token,
  ]);
  return { token, recovered };
}

/** Within a transaction: the lease row must still carry this lease's epoch and owner and be unexpired. */
export async function checkLeaseHeld(client: PoolClient, lease: Lease): Promise<void> {
  const result = await client.query<{ owner: string; epoch: string; expired: boolean }>(
    "SELECT owner, epoch, expires_at <= now() AS expired FROM harness_leases WHERE session_id = $1 FOR UPDATE",
    [lease.session],
  );
  const row = result.rows[0];
  const mine = row !== undefined && Number(row.epoch) === lease.epoch && row.owner === lease.owner;
  if (mine && !row.expired) return;
  throw fencedError(lease, row && { owner: row.owner, epoch: Number(row.epoch) });
}

/**
 * Why a writer under `lease` may not append, from the lease row as the database held it (absent:
 * the row is gone). The row being this lease's own means it expired before it was renewed.
 */
export function fencedError(lease: Lease, row: { owner: string; epoch: number } | undefined): JournalError {
  const mine = row !== undefined && row.epoch === lease.epoch && row.owner === lease.owner;
  const why = !row
    ? "it no longer exists"
    : mine
      ? "it expired before it was renewed"
      : `${row.owner} took the session over (epoch ${row.epoch})`;
  return new JournalError(
    "FENCED",
    `session ${lease.session}: this worker's lease (epoch ${lease.epoch}) is no longer held: ${why}. ` +
      "Nothing was written; stop working on the session.",
  );
}

async function refuseLeased(client: PoolClient, sessionId: string): Promise<void> {
  // A lease is taken on a root session and covers its sub-agents: a child is refused by its root's.
  const root = sessionId.split("/")[0] ?? sessionId;
  const result = await client.query<{ owner: string; epoch: string; expires_at: Date }>(
    "SELECT owner, epoch, expires_at FROM harness_leases WHERE session_id = $1 AND expires_at > now()",
    [root],
  );
  const row = result.rows[0];
  if (!row) return;
  throw new JournalError(
    "LOCKED",
    `session ${sessionId} is owned by worker ${row.owner} under a lease (epoch ${row.epoch}, until ` +
      `${row.expires_at.toISOString()} unless renewed); only one writer may append. Wait for it to finish or stop that worker.`,
  );
}

interface SessionRow {
  writer: unknown;
  writer_token: string | null;
}

async function lockSessionRow(client: PoolClient, sessionId: string, create: boolean): Promise<SessionRow> {
  const select = "SELECT writer, writer_token FROM harness_sessions WHERE session_id = $1 FOR UPDATE";
  const found = await client.query<SessionRow>(select, [sessionId]);
  if (found.rows[0]) return found.rows[0];
  if (!create) throw new JournalError("SESSION_NOT_FOUND", `session ${sessionId} does not exist`);
  // A sub-agent's session is created only below a recorded parent, as the file store's folder is.
  const parent = parentSessionId(sessionId);
  if (parent !== undefined) {
    const parentRow = await client.query("SELECT 1 FROM harness_sessions WHERE session_id = $1", [parent]);
    if (parentRow.rowCount !== 1) throw parentNotFound(sessionId, parent);
  }
  // A concurrent creator may insert first; then lock its row like any existing session.
  await client.query("INSERT INTO harness_sessions (session_id) VALUES ($1) ON CONFLICT DO NOTHING", [
    sessionId,
  ]);
  const created = await client.query<SessionRow>(select, [sessionId]);
  if (!created.rows[0]) throw new JournalError("SESSION_NOT_FOUND", `session ${sessionId} does not exist`);
  return created.rows[0];
}

/**
 * `harness unlock SESSION --database URL`: clear a session row's writer lock by the file store's
 * rules. A writer provably gone (on this host, its process no longer runs) is cleared; one whose
 * owner cannot be checked from here (another host, an unreadable record) only with `force`; a
 * live one never, nor a session a worker holds under an unexpired lease (that lease is its proof
 * of ownership, and it runs out by itself). A cleared writer that was not in fact gone is fenced:
 * every append checks the row still carries its token.
 */
export async function unlockPgSession(
  pool: Pool,
  sessionId: string,
  options: { force?: boolean } = {},
): Promise<UnlockResult> {
  return inTransaction(pool, async (client) => {
    const row = await lockSessionRow(client, sessionId, false);
    if (row.writer_token === null) return { outcome: "no_lock" };
    const status = writerStatus(row.writer);
    try {
      await refuseLeased(client, sessionId);
    } catch (error) {
      if (error instanceof JournalError) return { outcome: "refused", status, message: error.message };
      throw error;
    }
    if (status.state === "alive" || (status.state === "unknown" && options.force !== true))
      return { outcome: "refused", status, message: lockHeldError(sessionId, status, "database").message };
    await client.query(
      "UPDATE harness_sessions SET writer = NULL, writer_token = NULL WHERE session_id = $1 AND writer_token = $2",
      [sessionId, row.writer_token],
    );
    return { outcome: "removed", status, forced: status.state !== "gone" };
  });
}

/** The stored writer (database content: parsed like a lock file) and whether it still runs. */
function writerStatus(writer: unknown): LockStatus {
  // jsonb comes back parsed: an object here is a JSON object.
  const value =
    typeof writer === "object" && writer !== null && !Array.isArray(writer)
      ? (writer as JsonObject)
      : undefined;
  const process = value && parseProcessOwner(value);
  const startedAt = value?.started_at;
  if (!process || typeof startedAt !== "string") {
    return { state: "unknown", owner: null, reason: "its writer record cannot be read as an owner" };
  }
  const owner: LockOwner = { ...process, started_at: startedAt };
  return { ...ownerLiveness(owner), owner };
}
