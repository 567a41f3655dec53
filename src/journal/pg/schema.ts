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
 * - harness_append() and harness_take_lease(): an append and a lease acquisition, each one
 *   statement (one round trip) that runs the steps its transaction used to send one at a time.
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

/**
 * One append in one round trip: the checks and writes an append's transaction made one statement
 * at a time (six round trips: BEGIN, the lease row, the session row, INSERT, UPDATE, COMMIT), run
 * in the same order inside the database, under the same row locks (the lease row, then the
 * session row: the lock order everywhere), in the one transaction of the calling statement.
 * A failed check writes nothing and says which check failed, with what the rows held, so the
 * caller's error names the cause: `fenced` (the lease row, if any, is returned), `not_found`,
 * `locked`, or `seq` (with the session's next_seq). A null lease owner is a writer without a lease;
 * the lease's session is the root one (a lease covers its session's sub-agents).
 */
const APPEND = `
DROP FUNCTION IF EXISTS harness_append(text, bigint, text, text, bigint, bigint[], text[], text[]);
CREATE OR REPLACE FUNCTION harness_append(
  p_session text, p_expected bigint, p_token text, p_lease_session text, p_lease_owner text,
  p_lease_epoch bigint, p_seqs bigint[], p_hashes text[], p_lines text[],
  OUT status text, OUT lease_owner text, OUT lease_epoch bigint, OUT next_seq bigint
) LANGUAGE plpgsql AS $$
DECLARE
  l record;
  s record;
BEGIN
  IF p_lease_owner IS NOT NULL THEN
    SELECT h.owner, h.epoch, h.expires_at <= now() AS expired INTO l
      FROM harness_leases h WHERE h.session_id = p_lease_session FOR UPDATE;
    IF NOT FOUND OR l.owner <> p_lease_owner OR l.epoch <> p_lease_epoch OR l.expired THEN
      status := 'fenced';
      IF FOUND THEN lease_owner := l.owner; lease_epoch := l.epoch; END IF;
      RETURN;
    END IF;
  END IF;
  SELECT h.next_seq, h.writer_token INTO s FROM harness_sessions h WHERE h.session_id = p_session FOR UPDATE;
  IF NOT FOUND THEN status := 'not_found'; RETURN; END IF;
  IF s.writer_token IS DISTINCT FROM p_token THEN status := 'locked'; RETURN; END IF;
  IF s.next_seq <> p_expected THEN status := 'seq'; next_seq := s.next_seq; RETURN; END IF;
  INSERT INTO harness_records (session_id, seq, hash, line)
    SELECT p_session, v.seq, v.hash, v.line FROM unnest(p_seqs, p_hashes, p_lines) AS v(seq, hash, line);
  UPDATE harness_sessions SET next_seq = p_expected + cardinality(p_seqs) WHERE session_id = p_session;
  status := 'ok';
END
$$;
`;

/**
 * Taking a lease in one round trip (lease.ts): the row locked, then created (epoch 1) when there
 * is none, or taken over (epoch + 1) only when it has expired by the database clock; no row back
 * (a null epoch) when someone else holds it. Two first acquirers: the primary key lets one insert.
 */
const TAKE_LEASE = `
CREATE OR REPLACE FUNCTION harness_take_lease(
  p_session text, p_owner text, p_lease_ms bigint,
  OUT epoch bigint, OUT previous_owner text, OUT previous_epoch bigint
) LANGUAGE plpgsql AS $$
DECLARE
  l record;
  n bigint;
BEGIN
  SELECT h.owner, h.epoch, h.expires_at <= now() AS expired INTO l
    FROM harness_leases h WHERE h.session_id = p_session FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO harness_leases (session_id, owner, epoch, expires_at)
      VALUES (p_session, p_owner, 1, now() + p_lease_ms * interval '1 millisecond')
      ON CONFLICT (session_id) DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n = 1 THEN epoch := 1; END IF;
    RETURN;
  END IF;
  IF NOT l.expired THEN RETURN; END IF;
  UPDATE harness_leases SET owner = p_owner, epoch = l.epoch + 1,
      expires_at = now() + p_lease_ms * interval '1 millisecond'
    WHERE session_id = p_session;
  epoch := l.epoch + 1;
  previous_owner := l.owner;
  previous_epoch := l.epoch;
END
$$;
`;

/** A key for pg_advisory_xact_lock so that concurrent first runs do not race on CREATE TABLE. */
const DDL_LOCK_KEY = 0x6861726e; // "harn"

/** Create the tables if they are missing (idempotent; safe to run from many workers at once). */
export async function ensurePgSchema(pool: Pool): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [DDL_LOCK_KEY]);
    await client.query(DDL);
    await client.query(APPEND);
    await client.query(TAKE_LEASE);
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
