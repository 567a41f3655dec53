import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { errnoCode, errnoText } from "../shared/errno.js";
import { encodeRecord } from "./codec.js";
import { type GroupCommit, processGroupCommit } from "./group-commit.js";
import type { JournalKey } from "./key.js";
import { loadJournalKey } from "./key-file.js";
import { acquireLock, type HeldLock, inspectLockFile, lockFileLinked, releaseLock } from "./lock.js";
import {
  assertHarnessDir,
  assertSessionId,
  EVENTS_FILE,
  isAgentLabel,
  parentNotFound,
  parentSessionId,
  SESSION_ID_PATTERN,
  type SessionPaths,
  sessionPaths,
  sessionsDirOf,
} from "./session-path.js";
import { Staging } from "./staging.js";
import { checkSessionDir } from "./state-dir.js";
import {
  type AppendOptions,
  JournalError,
  type JournalStore,
  type JournalWriter,
  type OpenWriterOptions,
} from "./store.js";
import { assertAdoptionFirst, assessTrust, type JournalReading, untrustedError } from "./trust.js";
import { loadError, verifyJournalBytes } from "./verify.js";
import { type AnyNewEvent, type AnyRecord, GENESIS_HASH } from "./vocabulary.js";
import { RecordWindow } from "./window.js";

export interface FileJournalOptions {
  /** Clock for record times and lock start times; defaults to real time. */
  now?: () => Date;
  /**
   * The key that authenticates records; defaults to this user's journal key (see key-file.ts),
   * loaded on first use and refused when it lies inside the workspace that holds `harnessDir`.
   */
  key?: JournalKey;
  /** Where appends are made durable; defaults to the process's one group commit (group-commit.ts). */
  commit?: GroupCommit;
}

/** Open a file descriptor, or undefined when the file does not exist. */
function openIfExists(path: string, flags: number): number | undefined {
  try {
    return openSync(path, flags, 0o600);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return undefined;
    throw new JournalError("IO", `cannot open the journal (${errnoText(error)})`);
  }
}

/**
 * Sessions as JSONL files under `<harnessDir>/sessions/<id>/events.jsonl`. The constructor takes
 * the absolute path of the `.harness` directory itself (not the workspace root).
 */
export class FileJournalStore implements JournalStore {
  private readonly now: () => Date;
  private givenKey: JournalKey | undefined;
  private readonly commit: GroupCommit;
  /** Every fsync this store's writers made (journal files and directories), for tests and benchmarks. */
  readonly syncs: SyncCounter = { fsyncs: 0, fsyncMs: 0, bytes: 0 };

  constructor(
    readonly harnessDir: string,
    options: FileJournalOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.givenKey = options.key;
    this.commit = options.commit ?? processGroupCommit;
    assertHarnessDir(harnessDir);
  }

  /** The key records are authenticated with (this user's, unless one was given). Throws JournalError("KEY"). */
  get key(): JournalKey {
    this.givenKey ??= loadJournalKey({ workspaceRoot: dirname(this.harnessDir) });
    return this.givenKey;
  }

  async openWriter(sessionId: string, options: OpenWriterOptions): Promise<JournalWriter> {
    const paths = sessionPaths(this.harnessDir, sessionId);
    checkSessionDir(this.harnessDir, paths.sessionDir);
    const key = this.key;
    if (options.create) {
      this.assertParentExists(sessionId);
      mkdirIn(paths);
    } else if (!existsSync(paths.events)) {
      throw notFound(sessionId);
    }
    const lock = acquireLock(paths.lock, sessionId, this.now(), {
      recoverStale: options.recoverStaleLock === true,
    });
    try {
      return this.openLocked(paths, sessionId, lock, key, options);
    } catch (error) {
      releaseLock(lock);
      throw error;
    }
  }

  /** A sub-agent's folder is made inside its parent's: never for a parent that was not recorded. */
  private assertParentExists(sessionId: string): void {
    const parent = parentSessionId(sessionId);
    if (parent !== undefined && !existsSync(sessionPaths(this.harnessDir, parent).events))
      throw parentNotFound(sessionId, parent);
  }

  /** With the lock held: open (or create) the file and load it again, so no stale view is used. */
  private openLocked(
    paths: SessionPaths,
    sessionId: string,
    lock: HeldLock,
    key: JournalKey,
    options: OpenWriterOptions,
  ): FileJournalWriter {
    const create = options.create;
    const flags = constants.O_RDWR | constants.O_APPEND;
    let fd = openIfExists(paths.events, flags);
    let created = false;
    if (fd === undefined) {
      if (!create) throw notFound(sessionId);
      fd = openIfExists(paths.events, flags | constants.O_CREAT | constants.O_EXCL);
      if (fd === undefined) throw notFound(sessionId);
      created = true;
    }
    try {
      const bytes = readFileSync(fd);
      const result = verifyJournalBytes(bytes, sessionId);
      if (!result.ok) throw loadError(sessionId, result);
      const trust = assessTrust(result.records, key, sessionId);
      if (!trust.trusted && !options.adopt) throw untrustedError(trust);
      // A new (or still empty) session's directory entries must reach the disk with its first records.
      const syncDirs = created || result.records.length === 0;
      return new FileJournalWriter(
        sessionId,
        paths,
        fd,
        lock,
        result.records,
        bytes.length,
        syncDirs,
        this.now,
        key,
        !trust.trusted,
        this.syncs,
        this.commit,
      );
    } catch (error) {
      closeSync(fd);
      throw error instanceof JournalError
        ? error
        : new JournalError("IO", `session ${sessionId}: cannot load the journal (${errnoText(error)})`);
    }
  }

  async read(sessionId: string): Promise<AnyRecord[]> {
    const { records, trust } = await this.readReport(sessionId);
    if (!trust.trusted) throw untrustedError(trust);
    return records;
  }

  async readReport(sessionId: string): Promise<JournalReading> {
    const paths = sessionPaths(this.harnessDir, sessionId);
    checkSessionDir(this.harnessDir, paths.sessionDir);
    const key = this.key;
    for (let attempt = 1; ; attempt++) {
      const result = verifyJournalBytes(readEvents(paths, sessionId), sessionId);
      if (result.ok) return { records: result.records, trust: assessTrust(result.records, key, sessionId) };
      // While another process appends, a reader can catch its write half done; that tail is an
      // append in flight, not a torn one, so look again shortly before calling it damage.
      const writerActive = result.code === "TORN_TAIL" && inspectLockFile(paths.lock)?.state === "alive";
      if (!writerActive || attempt >= READ_ATTEMPTS_WHILE_WRITING) throw loadError(sessionId, result);
      await delay(READ_RETRY_MS);
    }
  }

  async exists(sessionId: string): Promise<boolean> {
    return existsSync(sessionPaths(this.harnessDir, sessionId).events);
  }

  /** Root session ids (directories holding an events file), sorted by name. */
  async list(): Promise<string[]> {
    const sessionsDir = sessionsDirOf(this.harnessDir);
    return sessionFolders(sessionsDir, (name) => SESSION_ID_PATTERN.test(name)).sort();
  }

  /** Sub-agent sessions of `sessionId`: folders named by a label inside its folder, holding an events file. */
  async listChildren(sessionId: string): Promise<string[]> {
    assertSessionId(sessionId);
    const { sessionDir } = sessionPaths(this.harnessDir, sessionId);
    return sessionFolders(sessionDir, isAgentLabel)
      .map((label) => `${sessionId}/${label}`)
      .sort();
  }
}

/**
 * Names of the real directories in `dir` that `named` accepts and that hold an events file (a
 * link is never one: opening it would be refused anyway). None when `dir` does not exist.
 */
function sessionFolders(dir: string, named: (name: string) => boolean): string[] {
  let entries: import("node:fs").Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    throw new JournalError("IO", `cannot list sessions (${errnoText(error)})`);
  }
  return entries
    .filter(
      (entry) => entry.isDirectory() && named(entry.name) && existsSync(join(dir, entry.name, EVENTS_FILE)),
    )
    .map((entry) => entry.name);
}

/** A count shared by a store and its writers. */
export interface SyncCounter {
  fsyncs: number;
  /** Wall time spent in those fsyncs (ms): what a benchmark takes out of a step to see the rest. */
  fsyncMs: number;
  /** Bytes of journal lines those fsyncs made durable: what a raw append of the same size compares with. */
  bytes: number;
}

const READ_ATTEMPTS_WHILE_WRITING = 5;
const READ_RETRY_MS = 10;

function readEvents(paths: SessionPaths, sessionId: string): Buffer {
  try {
    return readFileSync(paths.events);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") throw notFound(sessionId);
    throw new JournalError("IO", `session ${sessionId}: cannot read the journal (${errnoText(error)})`);
  }
}

function notFound(sessionId: string): JournalError {
  return new JournalError("SESSION_NOT_FOUND", `session ${sessionId} does not exist`);
}

/** `dir`, then each directory above it, up to and including `top`. */
function directoriesUp(dir: string, top: string): string[] {
  const dirs = [dir];
  for (let current = dir; current !== top; ) {
    const above = dirname(current);
    if (above === current) break;
    dirs.push(above);
    current = above;
  }
  return dirs;
}

function mkdirIn(paths: SessionPaths): void {
  try {
    mkdirSync(paths.sessionDir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new JournalError("IO", `cannot create the session directory (${errnoText(error)})`);
  }
}

class FileJournalWriter implements JournalWriter {
  /** What is kept in memory: a bounded window, not the journal (older records are read back from the file). */
  private readonly window: RecordWindow;
  /** Bytes written to the file (what fstat must report: anything else is another writer). */
  private size: number;
  /** Bytes known to be on disk: where a failed append cuts the file back to. */
  private durableSize: number;
  private state: "open" | "closed" | "failed" = "open";
  /** Encoded lines of staged records (already in the window), one text per append, written with the next durable append. */
  private readonly staging = new Staging<string, Promise<void>>((texts) => {
    // Handed to the write: in the file once it returns (only its fsync is awaited), or lost with
    // a failure that stops this writer.
    this.window.stored();
    return this.write(Buffer.from(texts.join(""), "utf8"));
  });
  /** The last durable write's fsync, settled or not: the file stays open until it is. */
  private lastSync: Promise<unknown> = Promise.resolve();
  readonly keyId: string;
  readonly recoveredLock: HeldLock["recovered"];

  constructor(
    readonly sessionId: string,
    private readonly paths: SessionPaths,
    private readonly fd: number,
    private readonly lock: HeldLock,
    records: AnyRecord[],
    size: number,
    private syncDirsOnAppend: boolean,
    private readonly now: () => Date,
    private readonly key: JournalKey,
    /** Opened to adopt an untrusted journal: the first append must be its journal.adopted. */
    private mustAdopt: boolean,
    private readonly syncs: SyncCounter,
    private readonly commit: GroupCommit,
  ) {
    this.window = new RecordWindow(sessionId, records);
    this.size = size;
    this.durableSize = size;
    this.keyId = key.id;
    this.recoveredLock = lock.recovered;
  }

  get length(): number {
    return this.window.length;
  }

  get last(): AnyRecord | undefined {
    return this.window.last;
  }

  get recent(): readonly AnyRecord[] {
    return this.window.recent;
  }

  /** Every record: the file's durable ones read back and verified again, then the staged ones. */
  async readAll(): Promise<AnyRecord[]> {
    this.assertWritable();
    return this.window.readAll(() => {
      const bytes = Buffer.alloc(this.size);
      let read = 0;
      while (read < bytes.length) {
        const n = readSync(this.fd, bytes, read, bytes.length - read, read);
        if (n === 0) break;
        read += n;
      }
      const result = verifyJournalBytes(bytes.subarray(0, read), this.sessionId);
      if (!result.ok) throw loadError(this.sessionId, result);
      return result.records;
    });
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
    let seq = this.window.length;
    const time = this.now();
    const added: AnyRecord[] = [];
    let text = "";
    for (const event of events) {
      const { record, line } = encodeRecord(event, seq, prev, time, this.key);
      added.push(record);
      text += line;
      prev = record.hash;
      seq += 1;
    }
    this.mustAdopt = false;
    // In the window before the write, as staged records are: the bytes reach the file
    // synchronously below (before anything else can append), and only the fsync is awaited.
    this.window.add(added, true);
    await this.staging.add([text], durable);
    return added;
  }

  private assertWritable(): void {
    if (this.state === "closed") {
      throw new JournalError("LOCKED", `session ${this.sessionId}: this writer is closed; open a new writer`);
    }
    if (this.state === "failed") {
      throw new JournalError(
        "IO",
        `session ${this.sessionId}: an earlier append failed, so this writer stopped; reopen the session to verify it`,
      );
    }
  }

  /**
   * One write and one fsync for the whole batch; any failure stops this writer for good. The write
   * is made at once on this thread (into the page cache: a SIGKILL right after keeps it); the
   * fsync goes to the process's group commit, and the append resolves when it is done.
   */
  private write(bytes: Buffer): Promise<void> {
    try {
      this.assertSoleWriter();
      let written = writeSync(this.fd, bytes);
      // Short writes on regular files happen only near a full disk; finish the same batch.
      while (written < bytes.length) written += writeSync(this.fd, bytes.subarray(written));
    } catch (error) {
      return Promise.reject(this.fail(error));
    }
    this.size += bytes.length;
    const size = this.size;
    // The new entries (the session directory, possibly `sessions/` itself) live in the session
    // directory and every one above it up to `.harness`: three for a root session, one more per
    // sub-agent level.
    const dirs = this.syncDirsOnAppend
      ? directoriesUp(this.paths.sessionDir, dirname(this.paths.sessionsDir))
      : [];
    this.syncDirsOnAppend = false;
    const began = performance.now();
    const synced = this.commit.sync(this.fd, dirs, this.syncs).then(
      () => {
        this.syncs.fsyncMs += performance.now() - began;
        // A failure of an earlier fsync of this file was seen first (they settle in order): an
        // fsync succeeding after one failed does not make the lost bytes durable.
        if (this.state === "failed") throw this.fail(new Error("an earlier fsync failed"));
        this.syncs.bytes += bytes.length;
        this.durableSize = Math.max(this.durableSize, size);
      },
      (error: unknown) => {
        throw this.fail(error);
      },
    );
    this.lastSync = synced.catch(() => undefined);
    return synced;
  }

  /** Stop this writer for good; cut the file back to its last durable record while the lock is ours. */
  private fail(error: unknown): JournalError {
    const open = this.state !== "closed";
    if (open) this.state = "failed";
    if (error instanceof JournalError) return error;
    if (open) {
      // Best effort: cut the file back to the last durable record so it still verifies.
      try {
        ftruncateSync(this.fd, this.durableSize);
        fsyncSync(this.fd);
        this.size = this.durableSize;
      } catch {
        // The reopen will report a torn tail instead.
      }
    }
    return new JournalError(
      "IO",
      `session ${this.sessionId}: append failed (${errnoText(error)}); the records were not made durable and the run must stop`,
    );
  }

  /** Refuse to append when the lock was removed or the file changed behind our back. */
  private assertSoleWriter(): void {
    if (!lockFileLinked(this.lock)) {
      throw new JournalError(
        "LOCKED",
        `session ${this.sessionId}: this writer's lock was removed or replaced; stopping so that two writers never append`,
      );
    }
    if (fstatSync(this.fd).size !== this.size) {
      throw new JournalError(
        "CORRUPT",
        `session ${this.sessionId}: the journal changed size behind this writer; stopping without appending`,
      );
    }
  }

  async close(): Promise<void> {
    if (this.state === "closed") return;
    let flushed: Promise<void> | undefined;
    try {
      // What is staged is written here and now (its fsync may still be running); a failed write
      // cuts the file back to its last durable record. No await before the lock is released: a
      // process exiting right after it starts the close (a second Ctrl-C) must not leave the
      // lock behind, and the written bytes outlive the process.
      if (this.state === "open") flushed = this.staging.flushAtClose();
    } finally {
      this.state = "closed";
      releaseLock(this.lock);
    }
    // The descriptor stays open until the fsyncs that name it are done (a closed number could be
    // reused by another file before the pool reaches it).
    await flushed;
    await this.lastSync;
    closeSync(this.fd);
  }
}
