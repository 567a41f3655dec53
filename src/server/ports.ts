import type { RunOptions } from "../api/methods.js";
import type { EngineListener, RunSummary } from "../engine/options.js";
import type { JournalStore } from "../journal/store.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import type { ApprovalPort } from "../runtime/ports.js";
import type { Identity } from "./identities.js";

/*
 * What the server needs from its embedder (the CLI's `harness serve`), which owns how a session
 * is set up (config, provider, tools, policy): the server never builds an engine itself.
 */

/** One engine run on a session: a turn, or a compaction. */
export interface SessionRun {
  run(): Promise<RunSummary>;
  steer(text: string): Promise<void>;
  interrupt(): void;
  /**
   * Settles once the run has journaled its first record (or ended without one), when that
   * happens elsewhere (a session thread): session/start answers after it, so a client that
   * follows the new session at once finds its journal, as with a run in this thread.
   */
  readonly started?: Promise<void>;
}

/** A session opened for serving: its journal, and engines on it. */
export interface OpenedSession {
  readonly sessionId: string;
  /** The workspace's real path (shown to the local user; never journaled). */
  readonly workspace: string;
  readonly store: JournalStore;
  /** Its records when it was opened (empty for a new session). */
  readonly records: readonly AnyRecord[];
  /** A turn: the goal of a session without records, else the next input. */
  turn(input: string, listener: EngineListener): SessionRun;
  compact(instructions: string | undefined, listener: EngineListener): SessionRun;
  /** End what the session holds open (MCP servers). */
  close(): Promise<void>;
  /**
   * Command templates a turn may name (`/NAME`) that are not loaded, with the message refusing
   * them: a session hosted on another thread refuses such a turn before it starts, as here.
   */
  readonly refusedCommands?: Readonly<Record<string, string>>;
  /**
   * Settles with why, when the session ended without being closed (its thread stopped): the hub
   * stops serving it, and a later session/start opens it again.
   */
  readonly lost?: Promise<string>;
}

export interface OpenRequest {
  /** The workspace's real path, as admission checked it. */
  workspace: string;
  /** The scripted model's file (real path, as admission checked it); `code`: may be a module. */
  script?: { path: string; code: boolean };
  /** An existing session to serve, or the id for a new one; absent: a new id. */
  sessionId?: string;
  options: RunOptions;
  identity: Identity;
  approver: (sessionId: string) => ApprovalPort;
}

/** Where sessions at rest are read: a workspace's journals, or the database's. */
export interface SessionStore {
  store: JournalStore;
  /** The workspace path (absent for a database). */
  workspace?: string;
  /** Verify a session's chain: the records, or what is wrong. */
  verify(
    sessionId: string,
  ): Promise<{ ok: boolean; records: number; problems: string[]; head: string | null }>;
  /** A new session holding this one's history (up to `atSeq`); its id. */
  fork(sessionId: string, atSeq: number | undefined): Promise<string>;
  /**
   * Who else holds the session's writer lock, described for a message, when a live process other
   * than this one does (a `run`, `chat` or worker appending to it now); undefined otherwise.
   */
  lockHolder?(sessionId: string): Promise<string | undefined>;
  /**
   * A cheap token that changes when the session's journal may have grown (its file's size and
   * times); absent: the follower reads the journal on every poll.
   */
  stamp?(sessionId: string): Promise<string | undefined>;
}

export interface SessionFactory {
  open(request: OpenRequest): Promise<OpenedSession>;
  /** The store of a workspace, or (undefined) the server's default (--workspace, --database). */
  store(workspace: string | undefined): Promise<SessionStore | undefined>;
  /**
   * Every store the server serves by default, listed without a workspace named: each
   * --workspace (else the current directory, when it holds harness state) and the database.
   */
  served(): Promise<SessionStore[]>;
}
