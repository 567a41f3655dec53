import type { AnyNewEvent, AnyRecord } from "./vocabulary.js";

/**
 * The journal seam. A store is one session's append-only log, held by exactly one writer.
 * Implementations: FileJournalStore (JSONL + fsync + lock file), MemoryJournalStore.
 */
export interface JournalWriter {
  readonly sessionId: string;
  /** Verified records, in order. */
  readonly records: readonly AnyRecord[];
  /**
   * Append events as consecutive records and make them durable (one fsync for the batch)
   * before resolving. A failure here is an engine failure: the run must stop.
   */
  append(events: readonly AnyNewEvent[]): Promise<AnyRecord[]>;
  /** Release the writer lock. */
  close(): Promise<void>;
}

export interface SessionSummary {
  sessionId: string;
  records: number;
}

export interface JournalBackend {
  /** Open a session for writing: take the lock, load and verify. `create` makes it if absent. */
  openWriter(sessionId: string, options: { create: boolean }): Promise<JournalWriter>;
  /** Load and verify a session without taking the lock. */
  read(sessionId: string): Promise<AnyRecord[]>;
  exists(sessionId: string): Promise<boolean>;
  list(): Promise<string[]>;
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
  /** A session id that does not match SESSION_ID_PATTERN (a caller or user error). */
  | "INVALID_SESSION_ID"
  /** An event whose type is unknown or whose data fails its schema; nothing was written. */
  | "INVALID_EVENT";

/** An engine-level journal failure; the message says what to do next. */
export class JournalError extends Error {
  readonly code: JournalErrorCode;
  constructor(code: JournalErrorCode, message: string) {
    super(message);
    this.name = "JournalError";
    this.code = code;
  }
}
