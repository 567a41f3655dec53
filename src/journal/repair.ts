import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  readFileSync,
} from "node:fs";
import { basename } from "node:path";
import { errnoCode, errnoText } from "../shared/errno.js";
import { fsyncPath } from "../shared/fsync.js";
import { acquireLock, releaseLock } from "./lock.js";
import { type SessionPaths, sessionPaths } from "./session-path.js";
import { JournalError } from "./store.js";
import { verifyJournalBytes } from "./verify.js";

export interface RepairResult {
  /** Absolute path of the byte-identical copy taken before truncating; null when nothing was wrong. */
  backup: string | null;
  keptRecords: number;
  droppedBytes: number;
  /** Lines cut off, counting a final line without newline. */
  droppedLines: number;
}

export interface RepairOptions {
  /** Clock for the backup name and the lock record; defaults to real time. */
  now?: () => Date;
}

function countLines(tail: Buffer): number {
  let lines = 0;
  for (let at = tail.indexOf(0x0a); at !== -1; at = tail.indexOf(0x0a, at + 1)) lines += 1;
  return tail.length > 0 && tail[tail.length - 1] !== 0x0a ? lines + 1 : lines;
}

/** Copy the journal next to itself as `events.jsonl.bak-<time>` (never overwriting) and make it durable. */
function backUp(paths: SessionPaths, at: Date): string {
  const stamp = at.toISOString().replace(/:/g, "-");
  for (let attempt = 0; attempt < 100; attempt++) {
    const backup = `${paths.events}.bak-${stamp}${attempt === 0 ? "" : `-${attempt}`}`;
    try {
      copyFileSync(paths.events, backup, constants.COPYFILE_EXCL);
    } catch (error) {
      if (errnoCode(error) === "EEXIST") continue;
      throw error;
    }
    fsyncPath(backup);
    fsyncPath(paths.sessionDir);
    return backup;
  }
  throw new JournalError("IO", "cannot choose a free backup name next to the journal");
}

/**
 * Cut a damaged journal back to its longest verified prefix, after a byte-identical backup.
 * Takes the writer lock for the duration, so it refuses (LOCKED / STALE_LOCK) while another writer
 * holds the session or a stale lock is still in place.
 */
export async function repairJournal(
  harnessDir: string,
  sessionId: string,
  options: RepairOptions = {},
): Promise<RepairResult> {
  const now = options.now ?? (() => new Date());
  const paths = sessionPaths(harnessDir, sessionId);
  if (!existsSync(paths.events))
    throw new JournalError("SESSION_NOT_FOUND", `session ${sessionId} does not exist`);
  const lock = acquireLock(paths.lock, sessionId, now());
  try {
    return repairLocked(paths, sessionId, now);
  } catch (error) {
    if (error instanceof JournalError) throw error;
    throw new JournalError("IO", `session ${sessionId}: repair failed (${errnoText(error)})`);
  } finally {
    releaseLock(lock);
  }
}

function repairLocked(paths: SessionPaths, sessionId: string, now: () => Date): RepairResult {
  let bytes: Buffer;
  try {
    bytes = readFileSync(paths.events);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") {
      throw new JournalError("SESSION_NOT_FOUND", `session ${sessionId} does not exist`);
    }
    throw error;
  }
  const result = verifyJournalBytes(bytes, sessionId);
  if (result.ok)
    return { backup: null, keptRecords: result.records.length, droppedBytes: 0, droppedLines: 0 };

  const backup = backUp(paths, now());
  const fd = openSync(paths.events, constants.O_RDWR);
  try {
    ftruncateSync(fd, result.validBytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  const after = verifyJournalBytes(readFileSync(paths.events), sessionId);
  if (!after.ok || after.records.length !== result.validRecords) {
    throw new JournalError(
      "IO",
      `session ${sessionId}: the journal does not verify after repair; the original is kept as ${basename(backup)}`,
    );
  }
  return {
    backup,
    keptRecords: result.validRecords,
    droppedBytes: bytes.length - result.validBytes,
    droppedLines: countLines(bytes.subarray(result.validBytes)),
  };
}
