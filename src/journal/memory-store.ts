import { decodeRecordLine, encodeRecord, isRecordFault } from "./codec.js";
import { JournalKey } from "./key.js";
import { currentOwner, type LockOwner, lockHeldError } from "./lock.js";
import { assertSessionId, parentNotFound, parentSessionId } from "./session-path.js";
import { Staging } from "./staging.js";
import {
  type AppendOptions,
  JournalError,
  type JournalStore,
  type JournalWriter,
  type OpenWriterOptions,
} from "./store.js";
import { assertAdoptionFirst, assessTrust, type JournalReading, untrustedError } from "./trust.js";
import { type AnyNewEvent, type AnyRecord, GENESIS_HASH } from "./vocabulary.js";
import { RecordWindow } from "./window.js";

export interface MemoryJournalOptions {
  now?: () => Date;
  /** The key that authenticates records; defaults to one that lives as long as this store. */
  key?: JournalKey;
}

interface MemorySession {
  /** Encoded lines (without "\n"), exactly as the file store would store them. */
  lines: string[];
  /** The writer holding the session, identified by object identity. */
  holder: { owner: LockOwner } | undefined;
}

/**
 * The journal contract in memory: same encoding, verification and single-writer rule as the file
 * store, without durability. Reads decode the stored lines again, so callers get fresh objects.
 */
export class MemoryJournalStore implements JournalStore {
  private sessions = new Map<string, MemorySession>();
  private readonly now: () => Date;
  readonly key: JournalKey;
  /** Durable appends that stored something (what would each be one fsync on a file), for tests. */
  readonly syncs = { fsyncs: 0 };

  constructor(options: MemoryJournalOptions = {}) {
    this.now = options.now ?? (() => new Date());
    this.key = options.key ?? JournalKey.ephemeral();
  }

  /** Another handle on the same sessions that authenticates with `key` (as another user would). */
  withKey(key: JournalKey): MemoryJournalStore {
    const other = new MemoryJournalStore({ now: this.now, key });
    other.sessions = this.sessions;
    return other;
  }

  async openWriter(sessionId: string, options: OpenWriterOptions): Promise<JournalWriter> {
    assertSessionId(sessionId);
    let session = this.sessions.get(sessionId);
    if (!session) {
      if (!options.create) throw notFound(sessionId);
      const parent = parentSessionId(sessionId);
      if (parent !== undefined && !this.sessions.has(parent)) throw parentNotFound(sessionId, parent);
      session = { lines: [], holder: undefined };
      this.sessions.set(sessionId, session);
    }
    if (session.holder) throw lockHeldError(sessionId, { state: "alive", owner: session.holder.owner });
    const records = decodeAll(sessionId, session.lines);
    const trust = assessTrust(records, this.key, sessionId);
    if (!trust.trusted && !options.adopt) throw untrustedError(trust);
    const holder = { owner: currentOwner(this.now()) };
    session.holder = holder;
    return new MemoryJournalWriter(
      sessionId,
      session,
      holder,
      records,
      this.now,
      this.key,
      !trust.trusted,
      this.syncs,
    );
  }

  async read(sessionId: string): Promise<AnyRecord[]> {
    const { records, trust } = await this.readReport(sessionId);
    if (!trust.trusted) throw untrustedError(trust);
    return records;
  }

  async readReport(sessionId: string): Promise<JournalReading> {
    assertSessionId(sessionId);
    const session = this.sessions.get(sessionId);
    if (!session) throw notFound(sessionId);
    const records = decodeAll(sessionId, session.lines);
    return { records, trust: assessTrust(records, this.key, sessionId) };
  }

  /** The stored lines of a session (for tests that play a forger with direct access to storage). */
  linesOf(sessionId: string): string[] | undefined {
    return this.sessions.get(sessionId)?.lines;
  }

  /**
   * Take the session from its writer, as `harness unlock --force` does to a file session's lock:
   * the writer's next append is refused and what it staged is never stored (for tests).
   */
  clearWriter(sessionId: string): void {
    const session = this.sessions.get(sessionId);
    if (session) session.holder = undefined;
  }

  async exists(sessionId: string): Promise<boolean> {
    assertSessionId(sessionId);
    return this.sessions.has(sessionId);
  }

  /** Root sessions only: a sub-agent's is listed by its parent's `listChildren`. */
  async list(): Promise<string[]> {
    return [...this.sessions.keys()].filter((id) => parentSessionId(id) === undefined).sort();
  }

  async listChildren(sessionId: string): Promise<string[]> {
    assertSessionId(sessionId);
    return [...this.sessions.keys()].filter((id) => parentSessionId(id) === sessionId).sort();
  }
}

function notFound(sessionId: string): JournalError {
  return new JournalError("SESSION_NOT_FOUND", `session ${sessionId} does not exist`);
}

function decodeAll(sessionId: string, lines: readonly string[]): AnyRecord[] {
  const records: AnyRecord[] = [];
  let prev = GENESIS_HASH;
  for (const line of lines) {
    const decoded = decodeRecordLine(line, records.length, prev);
    if (isRecordFault(decoded))
      throw new JournalError(decoded.fault, `session ${sessionId}: ${decoded.message}`);
    records.push(decoded);
    prev = decoded.hash;
  }
  return records;
}

class MemoryJournalWriter implements JournalWriter {
  private closed = false;
  readonly keyId: string;
  /** Memory sessions die with their process, so there is never a stale lock to take over. */
  readonly recoveredLock = undefined;

  constructor(
    readonly sessionId: string,
    private readonly session: MemorySession,
    private readonly holder: { owner: LockOwner },
    records: AnyRecord[],
    private readonly now: () => Date,
    private readonly key: JournalKey,
    private mustAdopt: boolean,
    private readonly syncs: { fsyncs: number },
  ) {
    this.keyId = key.id;
    this.window = new RecordWindow(sessionId, records);
  }

  /** A bounded window, as the file writer keeps: older records are decoded again from the stored lines. */
  private readonly window: RecordWindow;

  /** Lines of staged records: invisible to readers until a durable append stores them. */
  private readonly staging = new Staging<string, void>((lines) => {
    this.window.stored();
    this.session.lines.push(...lines);
    this.syncs.fsyncs += 1;
  });

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
    this.assertHeld();
    return this.window.readAll(() => decodeAll(this.sessionId, this.session.lines));
  }

  private assertHeld(): void {
    if (this.closed || this.session.holder !== this.holder) {
      throw new JournalError("LOCKED", `session ${this.sessionId}: this writer is closed; open a new writer`);
    }
  }

  async append(events: readonly AnyNewEvent[], options: AppendOptions = {}): Promise<AnyRecord[]> {
    this.assertHeld();
    const last = this.window.last;
    if (this.mustAdopt && events.length > 0) assertAdoptionFirst(this.sessionId, events, last);
    let prev = last ? last.hash : GENESIS_HASH;
    const time = this.now();
    const encoded = events.map((event, index) => {
      const result = encodeRecord(event, this.window.length + index, prev, time, this.key);
      prev = result.record.hash;
      return result;
    });
    // All-or-nothing like the file's single write: nothing is stored unless every event encoded.
    this.window.add(
      encoded.map(({ record }) => record),
      true,
    );
    if (encoded.length > 0) this.mustAdopt = false;
    this.staging.add(
      encoded.map(({ line }) => line.slice(0, -1)),
      options.durable !== false,
    );
    return encoded.map((item) => item.record);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.session.holder === this.holder) this.staging.flushAtClose();
    this.closed = true;
    if (this.session.holder === this.holder) this.session.holder = undefined;
  }
}
