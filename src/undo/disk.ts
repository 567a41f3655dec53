import { randomBytes } from "node:crypto";
import { closeSync, constants, fsyncSync, openSync, writeSync } from "node:fs";
import { chmod, lstat, mkdir, open, readlink, rename, rmdir, symlink, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { errnoCode } from "../shared/errno.js";
import { sha256Hex } from "../shared/hash.js";
import { RESERVED_DIR } from "../workspace/fs.js";
import { DIR, type Entry, isDir } from "../workspace/manifest.js";
import { GIT_DIR_NAME } from "../workspace/protected.js";
import { RECORD_MAX_BYTES } from "../workspace/tree-snapshot.js";

/**
 * The workspace's files as an undo, an audit or a materialized fork sees and changes them: by
 * workspace-relative POSIX paths taken from a journal, so each is checked before it is used, and
 * never through a symlink in a parent directory (a link the session made could lead outside).
 */
export class TreePathError extends Error {
  override readonly name = "TreePathError";
}

/** The path's components, or TreePathError for one that is not a plain path inside the workspace. */
export function checkedParts(path: string): string[] {
  const parts = path.split("/");
  if (path.includes("\0") || parts.some((p) => p === "" || p === "." || p === ".."))
    throw new TreePathError("not a plain workspace-relative path");
  // harness's own state (journals, keys of trust) and git's are never part of a tree.
  if (parts[0]?.toLowerCase() === RESERVED_DIR || parts.some((p) => p.toLowerCase() === GIT_DIR_NAME))
    throw new TreePathError("inside .harness or .git, which no tree holds");
  return parts;
}

/** How a tree is read and written: with its directories (version 2 records) or without (older ones). */
export interface TreeMode {
  directories: boolean;
}

/**
 * The entry at `path` now: null when nothing is there, a file's hash/size/exec, a symlink's
 * target, a directory (when the tree records directories), or TreePathError for a directory in a
 * tree that does not or a special file (not something a tree records).
 * A parent that is not a real directory means nothing can be at the path through it: null.
 */
export async function currentEntry(
  root: string,
  path: string,
  mode: TreeMode,
): Promise<{ entry: Entry | null; bytes?: Buffer }> {
  const parts = checkedParts(path);
  if (!(await realParents(root, parts, false))) return { entry: null };
  const full = join(root, ...parts);
  const info = await lstat(full).catch((error: unknown) => {
    if (errnoCode(error) === "ENOENT" || errnoCode(error) === "ENOTDIR") return undefined;
    throw error;
  });
  if (info === undefined) return { entry: null };
  if (info.isSymbolicLink()) return { entry: { link: await readlink(full) } };
  if (info.isDirectory()) {
    if (mode.directories) return { entry: DIR };
    throw new TreePathError("is a directory now");
  }
  if (!info.isFile()) throw new TreePathError("is not a regular file now");
  const bytes = await readRegular(full);
  return {
    entry: { hash: sha256Hex(bytes), size: bytes.byteLength, exec: (info.mode & 0o100) !== 0 },
    bytes,
  };
}

/**
 * A file's bytes through a descriptor opened without following a link or blocking: a path swapped
 * for a link or a FIFO since it was looked at is a conflict, never followed or waited on.
 */
async function readRegular(full: string): Promise<Buffer> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (errnoCode(error) === "ELOOP") throw new TreePathError("became a symbolic link while being read");
    throw error;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new TreePathError("is not a regular file now");
    if (stats.size > RECORD_MAX_BYTES) throw new TreePathError("is over 2 GiB, too large to keep a copy of");
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/**
 * Put `entry` at `path`: a file's bytes or a symlink, written beside it under a temporary name
 * and renamed over it (a reader sees the old or the new, never half); a directory made; null
 * deletes it (a directory only when empty). Missing parents are created. In a tree that does not
 * record directories, a delete also removes the parent directories it left empty (the record
 * cannot say whether they were there before); one that does has its own step for each of them.
 */
export async function putEntry(
  root: string,
  path: string,
  entry: Entry | null,
  mode: TreeMode,
  bytes?: Uint8Array,
): Promise<void> {
  const parts = checkedParts(path);
  const full = join(root, ...parts);
  if (entry === null) {
    if (!(await realParents(root, parts, false))) return;
    const info = await lstat(full).catch(() => undefined);
    if (info?.isDirectory() && mode.directories) await rmdir(full);
    else if (info !== undefined)
      await unlink(full).catch((error: unknown) => {
        if (errnoCode(error) !== "ENOENT") throw error;
      });
    if (!mode.directories) await pruneEmptyParents(root, parts);
    return;
  }
  if (!(await realParents(root, parts, true)))
    throw new TreePathError("a parent directory is a file or a symlink now");
  const existing = await lstat(full).catch(() => undefined);
  if (isDir(entry)) {
    if (existing?.isDirectory()) return;
    if (existing !== undefined) await unlink(full);
    await mkdir(full);
    return;
  }
  // A directory where a file goes back: only an empty one is replaced (its entries are steps of their own).
  if (existing?.isDirectory() && mode.directories) await rmdir(full);
  const temp = join(dirname(full), `.harness-undo-${randomBytes(6).toString("hex")}`);
  try {
    if ("link" in entry) {
      await symlink(entry.link, temp);
    } else {
      if (bytes === undefined) throw new TreePathError("no content to restore");
      const base = existing?.isFile() ? existing.mode & 0o666 : 0o644;
      const fileMode = entry.exec ? base | ((base & 0o444) >> 2) : base;
      const fd = openSync(temp, "wx", fileMode);
      try {
        writeSync(fd, bytes);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      await chmod(temp, fileMode);
    }
    await rename(temp, full);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
}

/**
 * Whether every parent of the path is a real directory (not a symlink, not a file); with
 * `create`, missing ones are made. A symlinked parent is never followed.
 */
async function realParents(root: string, parts: readonly string[], create: boolean): Promise<boolean> {
  let dir = root;
  for (const part of parts.slice(0, -1)) {
    dir = join(dir, part);
    const info = await lstat(dir).catch(() => undefined);
    if (info === undefined) {
      if (!create) return false;
      await mkdir(dir);
      continue;
    }
    if (!info.isDirectory()) return false;
  }
  return true;
}

async function pruneEmptyParents(root: string, parts: readonly string[]): Promise<void> {
  for (let depth = parts.length - 1; depth > 0; depth--) {
    try {
      await rmdir(join(root, ...parts.slice(0, depth)));
    } catch {
      return; // not empty (or gone): the directories above are not empty either
    }
  }
}
