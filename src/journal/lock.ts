import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  linkSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { errnoCode, errnoText } from "../shared/errno.js";
import { parseJsonObject } from "../shared/json.js";
import { ownerLiveness, type ProcessOwner, parseProcessOwner, thisProcess } from "../shared/process-owner.js";
import { sessionPaths } from "./session-path.js";
import { JournalError } from "./store.js";

/**
 * The single-writer lock: `<session>/writer.lock`, created whole (linked, never empty), holding who took it.
 * A lock is never taken over silently. When its owner is provably gone (same host, and the pid no
 * longer exists or now belongs to a process with a different start time) the lock is stale: a
 * writer opened to recover it (resume) takes it over and reports whose it was, for the journal;
 * otherwise a person clears it with `harness unlock <session>`. Age alone proves nothing, a live
 * owner is never displaced, and a lock from another host cannot be judged from here.
 */
export interface LockOwner extends ProcessOwner {
  started_at: string;
}

/**
 * A lock this process holds. The lock file stays open (`fd`) so that checking it on every append
 * is one fstat: a link count of 0 means someone removed it (for example a forced unlock).
 * `text` and `ino` identify the file, so we never remove someone else's.
 */
export interface HeldLock {
  readonly path: string;
  readonly owner: LockOwner;
  readonly text: string;
  readonly ino: number;
  readonly fd: number;
  /** The stale lock this one replaced, when it was taken over. */
  readonly recovered?: { owner: LockOwner; reason: string };
}

export type LockStatus =
  | { state: "alive"; owner: LockOwner }
  | { state: "gone"; owner: LockOwner; reason: string }
  /** The owner cannot be checked from here (unreadable lock file, or another host). */
  | { state: "unknown"; owner: LockOwner | null; reason: string };

/** Where the session is stored, for the command a message suggests: a workspace, or PostgreSQL. */
export type LockStore = "file" | "database";

function unlockCommand(sessionId: string, store: LockStore): string {
  return `harness unlock ${sessionId}${store === "database" ? " --database URL" : ""}`;
}

export function currentOwner(now: Date): LockOwner {
  const { pid, host, proc_start } = thisProcess();
  return { pid, host, started_at: now.toISOString(), proc_start };
}

export function describeOwner(owner: LockOwner): string {
  return `pid ${owner.pid} on host ${owner.host}, started ${owner.started_at}`;
}

/** Parse lock file text; null when it is not a well-formed owner record (external input). */
function parseLockOwner(text: string): LockOwner | null {
  const value = parseJsonObject(text);
  const owner = value && parseProcessOwner(value);
  if (owner === undefined || typeof value?.started_at !== "string") return null;
  return { pid: owner.pid, host: owner.host, started_at: value.started_at, proc_start: owner.proc_start };
}

/** Whether the owner of a lock still runs, judged only from evidence on this host. */
function ownerStatus(owner: LockOwner): LockStatus {
  return { ...ownerLiveness(owner), owner };
}

function readLockText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return undefined;
    throw ioError("cannot read the writer lock", error);
  }
}

/** The state of a session's lock file, or undefined when there is none. */
export function inspectLockFile(path: string): LockStatus | undefined {
  const text = readLockText(path);
  if (text === undefined) return undefined;
  const owner = parseLockOwner(text);
  if (!owner)
    return { state: "unknown", owner: null, reason: "its lock file cannot be read as an owner record" };
  return ownerStatus(owner);
}

function ioError(what: string, error: unknown): JournalError {
  const code = errnoText(error);
  return new JournalError("IO", `${what} (${code})`);
}

/** The error for a lock that someone else holds (or held). */
export function lockHeldError(
  sessionId: string,
  status: LockStatus,
  store: LockStore = "file",
): JournalError {
  if (status.state === "gone") {
    return new JournalError(
      "STALE_LOCK",
      `session ${sessionId} has a stale writer lock: its owner (${describeOwner(status.owner)}) is gone: ${status.reason}. ` +
        `Nothing was changed. \`harness resume ${sessionId}\` takes such a lock over; or clear it with \`${unlockCommand(sessionId, store)}\`.`,
    );
  }
  if (status.state === "alive") {
    return new JournalError(
      "LOCKED",
      `session ${sessionId} is open in another writer (${describeOwner(status.owner)}); only one writer may append. ` +
        "Wait for it to finish or stop it first.",
    );
  }
  const who = status.owner ? `${describeOwner(status.owner)}; ` : "";
  return new JournalError(
    "LOCKED",
    `session ${sessionId} is locked by another writer (${who}${status.reason}). ` +
      `It is not taken over automatically. If you are sure no harness is working on this session, ` +
      `clear it with \`${unlockCommand(sessionId, store)} --force\`.`,
  );
}

const CREATE_EXCLUSIVE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;

/**
 * Remove a stale lock so that the caller can take the session. Two recoverers could otherwise
 * both see the same stale lock, and the second would remove the lock the first just created; a
 * short exclusive `.recover` file makes the check-and-remove one step, and the lock is removed
 * only if it still holds exactly the stale owner's text.
 */
function removeStaleLock(path: string, sessionId: string, staleText: string): void {
  const mutex = `${path}.recover`;
  let fd: number;
  try {
    fd = openSync(mutex, CREATE_EXCLUSIVE, 0o600);
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw ioError("cannot recover the writer lock", error);
    throw new JournalError(
      "LOCKED",
      `session ${sessionId}: another process is taking over its stale writer lock; try again ` +
        `(if none is, remove ${mutex})`,
    );
  }
  try {
    if (readLockText(path) === staleText) unlinkSync(path);
  } finally {
    closeSync(fd);
    rmSync(mutex, { force: true });
  }
}

/**
 * Take the writer lock at `path` or throw LOCKED / STALE_LOCK naming the owner. With
 * `recoverStale`, a lock whose owner is provably gone is taken over and named in the result.
 * The owner record is written to a private file first and that file is then linked to `path`
 * (link fails if the lock exists): the lock appears with its owner in it, so a process killed at
 * any instant never leaves an empty lock, which would read as "unknown owner" and need a person
 * (`unlock --force`) before anyone could write the session again. A kill between the write and
 * the link leaves only the private file (named by pid), never a lock.
 */
export function acquireLock(
  path: string,
  sessionId: string,
  now: Date,
  options: { recoverStale?: boolean } = {},
): HeldLock {
  const owner = currentOwner(now);
  const text = `${JSON.stringify(owner)}\n`;
  const temp = `${path}.${owner.pid}-${randomBytes(6).toString("hex")}.new`;
  let fd: number;
  try {
    fd = openSync(temp, CREATE_EXCLUSIVE, 0o600);
  } catch (error) {
    throw ioError("cannot create the writer lock", error);
  }
  let held = false;
  try {
    writeSync(fd, text);
    let recovered: { owner: LockOwner; reason: string } | undefined;
    // A few attempts only cover a holder that releases between our link and our inspection.
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(temp, path);
        held = true;
        return { path, owner, text, ino: fstatSync(fd).ino, fd, ...(recovered ? { recovered } : {}) };
      } catch (error) {
        if (errnoCode(error) !== "EEXIST") throw ioError("cannot create the writer lock", error);
      }
      const staleText = readLockText(path);
      if (staleText === undefined) continue;
      const stale = parseLockOwner(staleText);
      const status: LockStatus = stale
        ? ownerStatus(stale)
        : { state: "unknown", owner: null, reason: "its lock file cannot be read as an owner record" };
      if (status.state === "gone" && options.recoverStale) {
        removeStaleLock(path, sessionId, staleText);
        recovered = { owner: status.owner, reason: status.reason };
        continue;
      }
      throw lockHeldError(sessionId, status);
    }
    throw new JournalError("LOCKED", `session ${sessionId}: the writer lock keeps changing hands; try again`);
  } finally {
    // The lock (when taken) is the same file under its own name; the private name goes either way.
    rmSync(temp, { force: true });
    if (!held) closeSync(fd);
  }
}

/** Cheap check for the append path: false once our lock file was unlinked (removed or replaced). */
export function lockFileLinked(lock: HeldLock): boolean {
  return fstatSync(lock.fd).nlink > 0;
}

/** Whether the lock file at its path is still the one we created, with our owner record. */
function isStillHeld(lock: HeldLock): boolean {
  if (!lockFileLinked(lock)) return false;
  const stat = statSync(lock.path, { throwIfNoEntry: false });
  if (!stat || stat.ino !== lock.ino) return false;
  return readLockText(lock.path) === lock.text;
}

/** Remove our lock and close it; a lock that is no longer ours (forced unlock, new owner) stays. */
export function releaseLock(lock: HeldLock): void {
  try {
    if (!isStillHeld(lock)) return;
    unlinkSync(lock.path);
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") {
      throw ioError("cannot remove the writer lock", error);
    }
  } finally {
    closeSync(lock.fd);
  }
}

export type UnlockResult =
  | { outcome: "no_lock" }
  | { outcome: "removed"; status: LockStatus; forced: boolean }
  | { outcome: "refused"; status: LockStatus; message: string };

/**
 * Remove a session's writer lock when its owner is provably gone, or when `force` is set (the
 * person has checked that no harness is using the session). Reports what was found either way.
 */
export async function unlockSession(
  harnessDir: string,
  sessionId: string,
  options: { force?: boolean } = {},
): Promise<UnlockResult> {
  const paths = sessionPaths(harnessDir, sessionId);
  const status = inspectLockFile(paths.lock);
  if (!status) return { outcome: "no_lock" };
  if (status.state !== "gone" && !options.force) {
    return { outcome: "refused", status, message: lockHeldError(sessionId, status).message };
  }
  try {
    unlinkSync(paths.lock);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return { outcome: "no_lock" };
    throw ioError("cannot remove the writer lock", error);
  }
  return { outcome: "removed", status, forced: status.state !== "gone" };
}
