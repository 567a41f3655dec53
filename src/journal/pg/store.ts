import type { Pool, PoolClient } from "pg";
import { decodeRecordLine, type EncodedRecord, encodeRecord, isRecordFault } from "../codec.js";
import type { JournalKey } from "../key.js";
import { loadJournalKey } from "../key-file.js";
import { currentOwner, type LockOwner } from "../lock.js";
import { assertSessionId } from "../session-path.js";
import { Staging } from "../staging.js";
import {
  type AppendOptions,
  JournalError,
  type JournalStore,
  type JournalWriter,
  type OpenWriterOptions,
} from "../store.js";
import { assertAdoptionFirst, assessTrust, type JournalReading, untrustedError } from "../trust.js";
import { type AnyNewEvent, type AnyRecord, GENESIS_HASH } from "../vocabulary.js";
import { RecordWindow } from "../window.js";
import type { Lease } from "./lease.js";
import { inTransaction } from "./schema.js";
import { claimWriter, fencedError, type WriterClaim } from "./writer-claim.js";

export interface PgJournalOptions {
  /** Clock for record times and writer-lock start times; defaults to real time. Leases use the database clock. */
  now?: () => Date;
  /** The key that authenticates records; defaults to this user's journal key (see key-file.ts). */
  key?: JournalKey;
}

export interface PgOpenWriterOptions extends OpenWriterOptions {
  /**
   * Write as the holder of this lease: opening takes the session from any writer lock, and every
   * append is fenced by the lease epoch (FENCED once the lease expired or was taken over).
   */
  lease?: Lease;
}

/**
 * The journal on PostgreSQL (tables in schema.ts, created by `ensurePgSchema`): the same canonical
 * lines, hash chain, authentication and single-writer rule as the file store, for sessions that
 * workers on several machines share. Each append is one transaction that states the sequence
 * number it expects (the session row, locked, must still say so) and, under a lease, that the
 * lease row still carries the writer's epoch; otherwise nothing is written.
 */
export class PgJournalStore implements JournalStore {
  private readonly now: () => Date;
  private givenKey: JournalKey | undefined;

  constructor(
    readonly pool: Pool,
    options: PgJournalOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.givenKey = options.key;
  }

  /** The key records are authenticated with (this user's, unless one was given). Throws JournalError("KEY"). */
  get key(): JournalKey {
    this.givenKey ??= loadJournalKey();
    return this.givenKey;
  }

  async openWriter(sessionId: string, options: PgOpenWriterOptions): Promise<JournalWriter> {
    assertSessionId(sessionId);
    const key = this.key;
    // A lease covers its session's sub-agents (`SESSION/LABEL...`): they run on the worker that
    // holds it, and their appends are fenced by the same lease row.
    if (options.lease && !underSession(sessionId, options.lease.session)) {
      throw new TypeError(`a lease on session ${options.lease.session} cannot open session ${sessionId}`);
    }
    const owner = currentOwner(this.now());
    const opened = await database(sessionId, "open the session", () =>
      inTransaction(this.pool, async (client) => {
        const claim = await claimWriter(client, sessionId, owner, options);
        const records = await loadRecords(client, sessionId);
        const trust = assessTrust(records, key, sessionId);
        if (!trust.trusted && !options.adopt) throw untrustedError(trust);
        return { claim, records, mustAdopt: !trust.trusted };
      }),
    );
    return new PgJournalWriter(
      this.pool,
      sessionId,
      opened.claim,
      opened.records,
      this.now,
      key,
      opened.mustAdopt,
      options.lease,
    );
  }

  async read(sessionId: string): Promise<AnyRecord[]> {
    const { records, trust } = await this.readReport(sessionId);
    if (!trust.trusted) throw untrustedError(trust);
    return records;
  }

  async readReport(sessionId: string): Promise<JournalReading> {
    assertSessionId(sessionId);
    const key = this.key;
    // One transaction so that the existence check and the records are the same snapshot.
    const records = await database(sessionId, "read the journal", () =>
      inTransaction(this.pool, async (client) => {
        await client.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
        if (!(await sessionExists(client, sessionId))) throw notFound(sessionId);
        return loadRecords(client, sessionId);
      }),
    );
    return { records, trust: assessTrust(records, key, sessionId) };
  }

  async exists(sessionId: string): Promise<boolean> {
    assertSessionId(sessionId);
    return database(sessionId, "look the session up", async () => {
      const client = await this.pool.connect();
      try {
        return await sessionExists(client, sessionId);
      } finally {
        client.release();
      }
    });
  }

  /**
   * Root session ids (a sub-agent's id holds a "/"), sorted by code point like the file store's
   * (not by the database's collation).
   */
  async list(): Promise<string[]> {
    const result = await database(undefined, "list sessions", () =>
      this.pool.query<{ session_id: string }>(
        "SELECT session_id FROM harness_sessions WHERE strpos(session_id, '/') = 0",
      ),
    );
    return result.rows.map((row) => row.session_id).sort();
  }

  /** Ids one level below `sessionId` (its sub-agents), sorted by code point. */
  async listChildren(sessionId: string): Promise<string[]> {
    assertSessionId(sessionId);
    const prefix = `${sessionId}/`;
    // Compared as text, never as a LIKE pattern: '_' is a label character and a LIKE wildcard.
    const result = await database(sessionId, "list its sub-agents", () =>
      this.pool.query<{ session_id: string }>(
        "SELECT session_id FROM harness_sessions WHERE left(session_id, char_length($1)) = $1",
        [prefix],
      ),
    );
    return result.rows
      .map((row) => row.session_id)
      .filter((id) => !id.slice(prefix.length).includes("/"))
      .sort();
  }
}

async function sessionExists(client: PoolClient, sessionId: string): Promise<boolean> {
  const result = await client.query("SELECT 1 FROM harness_sessions WHERE session_id = $1", [sessionId]);
  return result.rowCount === 1;
}

/** A session's records in order, verified as the file store verifies its lines. */
async function loadRecords(client: PoolClient, sessionId: string): Promise<AnyRecord[]> {
  const result = await client.query<{ seq: string; line: string }>(
    "SELECT seq, line FROM harness_records WHERE session_id = $1 ORDER BY seq",
    [sessionId],
  );
  const records: AnyRecord[] = [];
  let prev = GENESIS_HASH;
  for (const row of result.rows) {
    // decodeRecordLine checks that the line's own seq is its position; the row's must agree too.
    const decoded = decodeRecordLine(row.line, records.length, prev);
    if (isRecordFault(decoded))
      throw new JournalError(decoded.fault, `session ${sessionId}: ${decoded.message}`);
    if (Number(row.seq) !== decoded.seq) {
      throw new JournalError(
        "CORRUPT",
        `session ${sessionId}: row seq ${row.seq} holds record seq ${decoded.seq}`,
      );
    }
    records.push(decoded);
    prev = decoded.hash;
  }
  return records;
}

export function notFound(sessionId: string): JournalError {
  return new JournalError("SESSION_NOT_FOUND", `session ${sessionId} does not exist`);
}

/**
 * Run a database step, turning driver failures (connection refused, lost, timeouts) into
 * JournalError("IO") with what was being done; JournalErrors pass through.
 */
export async function database<T>(
  sessionId: string | undefined,
  what: string,
  step: () => Promise<T>,
): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof JournalError || error instanceof TypeError) throw error;
    const where = sessionId ? `session ${sessionId}: ` : "";
    const detail = error instanceof Error ? error.message : String(error);
    throw new JournalError("IO", `${where}cannot ${what} in PostgreSQL (${detail})`);
  }
}

class PgJournalWriter implements JournalWriter {
  private state: "open" | "closed" | "failed" | "fenced" = "open";
  /** Records appended with `durable: false`, written by the next durable append's transaction. */
  private readonly staging = new Staging<EncodedRecord, Promise<void>>((records) => this.store(records));
  readonly keyId: string;
  readonly recoveredLock: { owner: LockOwner; reason: string } | undefined;

  constructor(
    private readonly pool: Pool,
    readonly sessionId: string,
    private readonly claim: WriterClaim,
    records: AnyRecord[],
    private readonly now: () => Date,
    private readonly key: JournalKey,
    /** Opened to adopt an untrusted journal: the first append must be its journal.adopted. */
    private mustAdopt: boolean,
    private readonly lease: Lease | undefined,
  ) {
    this.keyId = key.id;
    this.recoveredLock = claim.recovered;
    this.window = new RecordWindow(sessionId, records);
  }

  /** A bounded window, as the file writer keeps: older records are read back from the database. */
  private readonly window: RecordWindow;

  get length(): number {
    return this.window.length;
  }

  get last(): AnyRecord | undefined {
    return this.window.last;
  }

  get recent(): readonly AnyRecord[] {
    return this.window.recent;
  }

  async readAll(): Promise<AnyRecord[]> {
    this.assertWritable();
    return this.window.readAll(() =>
      database(this.sessionId, "read the journal", () =>
        inTransaction(this.pool, (client) => loadRecords(client, this.sessionId)),
      ),
    );
  }

  async append(events: readonly AnyNewEvent[], options: AppendOptions = {}): Promise<AnyRecord[]> {
    this.assertWritable();
    const durable = options.durable !== false;
    if (events.length === 0) {
      await this.staging.add([], durable);
      return [];
    }
    const last = this.window.last;
    if (this.mustAdopt) assertAdoptionFirst(this.sessionId, events, last);
    let prev = last ? last.hash : GENESIS_HASH;
    const time = this.now();
    const added = events.map((event, index) => {
      const encoded = encodeRecord(event, this.window.length + index, prev, time, this.key);
      prev = encoded.record.hash;
      return encoded;
    });
    this.mustAdopt = false;
    // Staged records are chained and visible to this writer at once; readers see them only when
    // the next durable append's transaction stores them with its own (a crash loses a valid tail).
    this.window.add(
      added.map((item) => item.record),
      true,
    );
    await this.staging.add(added, durable);
    return added.map((item) => item.record);
  }

  /** Store staged records (the oldest first) in one fenced transaction; a failure stops this writer. */
  private async store(records: readonly EncodedRecord[]): Promise<void> {
    const expected = records[0]?.record.seq ?? this.window.length;
    // Handed to this transaction: stored, or lost with a failure that stops this writer.
    this.window.stored();
    try {
      await database(this.sessionId, "append", () => this.insert(expected, records));
    } catch (error) {
      this.state = error instanceof JournalError && error.code === "FENCED" ? "fenced" : "failed";
      throw error;
    }
  }

  /**
   * One statement, its own transaction (harness_append in schema.ts): fence, check the expected
   * seq and this writer's claim, insert, all in one round trip. A failed check wrote nothing.
   */
  private async insert(expected: number, added: readonly EncodedRecord[]): Promise<void> {
    const result = await this.pool.query<{
      status: "ok" | "fenced" | "not_found" | "locked" | "seq";
      lease_owner: string | null;
      lease_epoch: string | null;
      next_seq: string | null;
    }>("SELECT * FROM harness_append($1, $2, $3, $4, $5, $6, $7, $8, $9)", [
      this.sessionId,
      expected,
      this.claim.token,
      this.lease?.session ?? null,
      this.lease?.owner ?? null,
      this.lease?.epoch ?? null,
      added.map(({ record }) => record.seq),
      added.map(({ record }) => record.hash),
      added.map(({ line }) => line.slice(0, -1)),
    ]);
    const row = result.rows[0];
    switch (row?.status) {
      case "ok":
        return;
      case "fenced": {
        const held =
          row.lease_owner === null ? undefined : { owner: row.lease_owner, epoch: Number(row.lease_epoch) };
        throw fencedError(this.lease as Lease, held);
      }
      case "not_found":
        throw notFound(this.sessionId);
      case "locked":
        throw new JournalError(
          "LOCKED",
          `session ${this.sessionId}: this writer's lock was taken or cleared; stopping so that two writers never append`,
        );
      case "seq":
        throw new JournalError(
          "CORRUPT",
          `session ${this.sessionId}: the journal holds ${row.next_seq} records where this writer expected ${expected}; stopping without appending`,
        );
      default:
        throw new JournalError("IO", `session ${this.sessionId}: the append returned no status`);
    }
  }

  private assertWritable(): void {
    if (this.state === "closed") {
      throw new JournalError("LOCKED", `session ${this.sessionId}: this writer is closed; open a new writer`);
    }
    if (this.state === "fenced") {
      throw new JournalError(
        "FENCED",
        `session ${this.sessionId}: this writer's lease was lost, so it appends nothing more; stop working on the session`,
      );
    }
    if (this.state === "failed") {
      throw new JournalError(
        "IO",
        `session ${this.sessionId}: an earlier append failed, so this writer stopped; reopen the session to verify it`,
      );
    }
  }

  async close(): Promise<void> {
    if (this.state === "closed") return;
    // Best effort, as the file store does: what was staged is written before the lock is released.
    if (this.state === "open") await this.staging.flushAtClose();
    this.state = "closed";
    await database(this.sessionId, "release the writer lock", () =>
      this.pool.query(
        "UPDATE harness_sessions SET writer = NULL, writer_token = NULL WHERE session_id = $1 AND writer_token = $2",
        [this.sessionId, this.claim.token],
      ),
    );
  }
}

/** Whether `sessionId` is `root` or one of its sub-agents at any depth. */
function underSession(sessionId: string, root: string): boolean {
  return sessionId === root || sessionId.startsWith(`${root}/`);
}
