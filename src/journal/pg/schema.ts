import type { Pool, PoolClient } from "pg";

/**
 * The PostgreSQL tables behind PgJournalStore and leases. Tables are unqualified, so the
 * connection's search_path chooses the schema (tests give each run its own).
 *
 * - harness_sessions: one row per session. `next_seq` is the sequence number the next append must
 *   carry, so an append states what it expects and two writers can never both extend a session;
 *   `writer` is the single-writer lock of a writer opened without a lease (who holds it), and
 *   `writer_token` identifies the writer that holds it.
 * - harness_records: one row per journal record, `(session_id, seq)` unique. `line` is the record's
 *   canonical JSON exactly as the file store writes it (bytes matter: the hash covers them), `hash`
 *   repeats its chain hash for queries.
 * - harness_leases: who owns a session across machines: `epoch` grows by one on every takeover and
 *   fences appends; `expires_at` is compared with the database clock only.
 */
const DDL = `
CREATE TABLE IF NOT EXISTS harness_sessions (
  session_id text PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now(),
  next_seq bigint NOT NULL DEFAULT 0,
  writer jsonb,
  writer_token text
);
CREATE TABLE IF NOT EXISTS harness_records (
  session_id text NOT NULL REFERENCES harness_sessions (session_id),
  seq bigint NOT NULL CHECK (seq >= 0),
  hash text NOT NULL,
  line text NOT NULL,
  PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS harness_leases (
  session_id text PRIMARY KEY,
  owner text NOT NULL,
  epoch bigint NOT NULL CHECK (epoch >= 1),
  expires_at timestamptz NOT NULL
);
`;

/** A key for pg_advisory_xact_lock so that concurrent first runs do not race on CREATE TABLE. */
const DDL_LOCK_KEY = 0x6861726e; // "harn"

/** Create the tables if they are missing (idempotent; safe to run from many workers at once). */
export async function ensurePgSchema(pool: Pool): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [DDL_LOCK_KEY]);
    await client.query(DDL);
  });
}

/** Run `work` in one transaction on one pooled connection: committed if it returns, rolled back if it throws. */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
