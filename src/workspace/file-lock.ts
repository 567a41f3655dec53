import { randomBytes } from "node:crypto";
import { linkSync, lstatSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { errnoCode } from "../shared/errno.js";
import { sha256Hex } from "../shared/hash.js";
import { parseJsonObject } from "../shared/json.js";
import { ownerLiveness, type ProcessOwner, parseProcessOwner, thisProcess } from "../shared/process-owner.js";

/**
 * Per-file write locks shared by every harness process on a workspace, so that a
 * compare-and-swap write (check the version, then rename) is atomic across processes.
 *
 * A lock is `<dir>/<sha256 of the file's canonical path>.lock`, naming its owner: pid, host,
 * the process's start time (from /proc) and a random nonce. It is taken with link(2) of a
 * fully written temporary file, so it appears whole or not at all, and link fails if it exists.
 * Why not a library: the maintained npm lock packages decide staleness by age (mtime), so a
 * slow holder can lose its lock and a crashed one blocks others until the age passes; here a
 * lock is broken only when its owner is provably gone (same host, and the pid is absent or is a
 * different process now), and a live owner's lock is never taken, however old.
 */
export interface FileLockOptions {
  /** How long to wait for a live holder before giving up. */
  timeoutMs?: number;
}

export class FileLockTimeout extends Error {
  override readonly name = "FileLockTimeout";
  constructor(readonly waitedMs: number) {
    super(`another writer held the lock for over ${waitedMs} ms`);
  }
}

/** The lock directory is not a plain directory (a symlink planted in its place, say). */
export class FileLockDirectoryError extends Error {
  override readonly name = "FileLockDirectoryError";
  constructor() {
    super("the lock directory is not a plain directory inside the workspace");
  }
}

interface Owner extends ProcessOwner {
  nonce: string;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_BACKOFF_MS = 20;

/**
 * Run `action` holding the lock on `key` in `dir` (created, with its parent, if missing: both
 * must be real directories). The lock is released on every path out of `action`.
 */
export async function withFileLock<T>(
  dir: string,
  key: string,
  action: () => Promise<T>,
  options: FileLockOptions = {},
): Promise<T> {
  const release = await acquire(dir, key, options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  try {
    return await action();
  } finally {
    release();
  }
}

/** This process as a lock owner: read once, since /proc costs more than the rest of a lock. */
let self: Omit<Owner, "nonce"> | undefined;

/** Lock directories already created (or found) by this process. */
const ensured = new Set<string>();

async function acquire(dir: string, key: string, timeoutMs: number): Promise<() => void> {
  prepareDirectory(dir);
  const lockPath = path.join(dir, `${sha256Hex(key)}.lock`);
  self ??= thisProcess();
  const owner: Owner = { ...self, nonce: randomBytes(8).toString("hex") };
  const text = JSON.stringify(owner);
  const temp = `${lockPath}.${owner.nonce}.tmp`;
  writeFileSync(temp, text, { flag: "wx", mode: 0o600 });
  const started = Date.now();
  let backoff = 1;
  try {
    for (;;) {
      try {
        linkSync(temp, lockPath);
        return () => release(lockPath, text);
      } catch (error) {
        if (errnoCode(error) !== "EEXIST") throw error;
      }
      const held = readOrUndefined(lockPath);
      if (held === undefined) continue; // released between our link and our read
      const holder = parseOwner(held);
      if (holder !== undefined && ownerLiveness(holder).state === "gone") {
        breakStale(lockPath, held, owner.nonce);
        continue;
      }
      if (Date.now() - started >= timeoutMs) throw new FileLockTimeout(timeoutMs);
      await new Promise((resolve) => setTimeout(resolve, backoff));
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
  } finally {
    unlinkSync(temp);
  }
}

/** Remove the lock only if it is still ours (nobody removes a live owner's lock, but be exact). */
function release(lockPath: string, text: string): void {
  if (readOrUndefined(lockPath) === text) unlinkSync(lockPath);
}

/**
 * Remove a lock whose owner is gone. The lock is first moved aside atomically, then compared
 * with what was judged stale: if a live writer replaced it in between, its lock is put back.
 */
function breakStale(lockPath: string, staleText: string, nonce: string): void {
  const aside = `${lockPath}.${nonce}.stale`;
  try {
    renameSync(lockPath, aside);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return; // someone else broke or released it
    throw error;
  }
  try {
    if (readOrUndefined(aside) !== staleText) {
      try {
        linkSync(aside, lockPath);
      } catch {
        // Another writer took the lock meanwhile; it holds it now.
      }
    }
  } finally {
    unlinkSync(aside);
  }
}

/**
 * Make sure `dir` and its parent exist as real directories. After the first time only `dir`
 * is checked (one lstat), so a symlink planted later is still refused.
 */
function prepareDirectory(dir: string): void {
  if (ensured.has(dir)) {
    try {
      if (!lstatSync(dir).isDirectory()) throw new FileLockDirectoryError();
      return;
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw error;
      ensured.delete(dir); // removed meanwhile: create it again
    }
  }
  ensureDirectory(path.dirname(dir));
  ensureDirectory(dir);
  ensured.add(dir);
}

function ensureDirectory(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw error;
  }
  // lstat: a symlink in place of the directory would put lock files wherever it points.
  if (!lstatSync(dir).isDirectory()) throw new FileLockDirectoryError();
}

function readOrUndefined(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return undefined;
    throw error;
  }
}

/** A lock file's owner, or undefined when it is not one of ours (then it is never broken). */
function parseOwner(text: string): Owner | undefined {
  const value = parseJsonObject(text);
  const owner = value && parseProcessOwner(value);
  if (owner === undefined || typeof value?.nonce !== "string") return undefined;
  return { ...owner, nonce: value.nonce };
}
