import { CodedError } from "../shared/coded-error.js";
import type { LockOwner } from "./lock.js";
import type { JournalReading } from "./trust.js";
import type { AnyNewEvent, AnyRecord } from "./vocabulary.js";

/**
 * The journal seam. A store is one session's append-only log, held by exactly one writer.
 * Implementations: FileJournalStore (JSONL + fsync + lock file), MemoryJournalStore.
 */
export interface JournalWriter {
  readonly sessionId: string;
  /** How many records the session has, staged ones included. */
  readonly length: number;
  /** The latest record (staged or stored); undefined for a session without records. */
  readonly last: AnyRecord | undefined;
  /**
   * The most recent records, oldest first: a bounded window (window.ts), never the whole journal,
   * so a long session's memory stays flat. Older records are read back with `readAll`.
   */
  readonly recent: readonly AnyRecord[];
  /**
   * Every record, in order, staged ones included: the records verified at open while nothing was
   * appended since, else read back from storage and verified again (the stored chain must end
   * where this writer's does: a journal changed behind it is refused, CORRUPT). Fresh array; the
   * caller drops it when done (a writer never holds the whole journal).
   */
  readAll(): Promise<AnyRecord[]>;
  /**
   * Append events as consecutive records and make them durable (one fsync for the batch, which
   * also carries every record staged before it) before resolving. With `{ durable: false }` the
   * records are staged: encoded, chained and among `readAll`'s at once, written with the next durable
   * append (an empty one just flushes). A crash loses at most the staged tail, which leaves a
   * valid, shorter chain. A writer may make every append durable (ignoring the option): that is
   * always allowed. A failure here is an engine failure: the run must stop. Every store keeps its
   * staged records in a `Staging` (staging.ts), which holds this rule in one place.
   */
  append(events: readonly AnyNewEvent[], options?: AppendOptions): Promise<AnyRecord[]>;
  /** Write what is staged (best effort), then release the writer lock. */
  close(): Promise<void>;
  /** Fingerprint of the key this writer authenticates records with (recorded in session.started). */
  readonly keyId: string;
  /**
   * Set when opening took over a lock whose owner was provably gone: who held it and why it was
   * judged gone. The caller journals it (`lock.recovered`).
   */
  readonly recoveredLock: { owner: LockOwner; reason: string } | undefined;
}

export interface AppendOptions {
  /** false: stage the records for the next durable append instead of syncing now. Default true. */
  durable?: boolean;
}

export interface OpenWriterOptions {
  /** Make the session if it does not exist. */
  create: boolean;
  /**
   * Open a journal that is not trusted, to adopt it: the first append must be the
   * `journal.adopted` record naming its head. Without it an untrusted journal is refused (UNTRUSTED).
   */
  adopt?: boolean;
  /** Take over a writer lock whose owner is provably gone instead of refusing (STALE_LOCK). */
  recoverStaleLock?: boolean;
}

export interface SessionSummary {
  sessionId: string;
  records: number;
}

export interface JournalStore {
  /** Open a session for writing: take the lock, load and verify. `create` makes it if absent. */
  openWriter(sessionId: string, options: OpenWriterOptions): Promise<JournalWriter>;
  /** Load and verify a session without taking the lock; an untrusted journal is refused (UNTRUSTED). */
  read(sessionId: string): Promise<AnyRecord[]>;
  /**
   * Load and verify a session's chain and report whether it is trusted, without refusing an
   * untrusted one: for commands that only show a journal (inspect, sessions, adopt).
   */
  readReport(sessionId: string): Promise<JournalReading>;
  exists(sessionId: string): Promise<boolean>;
  /** The root sessions, sorted by id: a sub-agent's session is reached through its parent. */
  list(): Promise<string[]>;
  /**
   * The sub-agent sessions `sessionId` started (`sessionId/LABEL`, one level down) that exist,
   * sorted by id; none for a session without any or that does not exist.
   */
  listChildren(sessionId: string): Promise<string[]>;
}

export type JournalErrorCode =
  | "SESSION_NOT_FOUND"
  | "SESSION_EXISTS"
  | "LOCKED"
  | "STALE_LOCK"
  | "TORN_TAIL"
  | "CORRUPT"
  | "TAMPERED"
  | "IO"
  /** A session id that is not a root id (SESSION_ID_PATTERN) with up to MAX_AGENT_DEPTH "/LABEL" (a caller or user error). */
  | "INVALID_SESSION_ID"
  /** An event whose type is unknown or whose data fails its schema; nothing was written. */
  | "INVALID_EVENT"
  /** A journal this user did not record (or adopt): forged, re-chained, unauthenticated or another key's. */
  | "UNTRUSTED"
  /** The user's journal key cannot be used (missing directory, wrong owner or mode, inside a workspace). */
  | "KEY"
  /** A writer opened under a lease that expired or was taken over: nothing was written, stop working. */
  | "FENCED";

/** An engine-level journal failure; the message says what to do next. */
export class JournalError extends CodedError<JournalErrorCode> {
  override readonly name = "JournalError";
}
