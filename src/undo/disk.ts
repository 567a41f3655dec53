import { randomBytes } from "node:crypto";
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  rmdirSync,
  symlinkSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { errnoCode } from "../shared/errno.js";
import { sha256Hex } from "../shared/hash.js";
import { BeneathError, HeldDir } from "../workspace/beneath.js";
import { RESERVED_DIR } from "../workspace/fs.js";
import { DIR, type Entry, isDir, isUnread } from "../workspace/manifest.js";
import { GIT_DIR_NAME } from "../workspace/protected.js";
import { RECORD_MAX_BYTES, unreadEntry } from "../workspace/tree-entry.js";

/**
 * The workspace's files as an undo, an audit or a materialized fork sees and changes them: by
 * workspace-relative POSIX paths taken from a journal, so each is checked before it is used, and
 * reached from the root through held directory descriptors (workspace/beneath.ts): never through a
 * symlink in any component (a link the session made could lead outside), never outside the root.
 */
export class TreePathError extends Error {
  override readonly name = "TreePathError";
}

/** The path's components, or TreePathError for one that is not a plain path inside the workspace. */
export function checkedParts(path: string): string[] {
  const parts = path.split("/");
  if (path.includes("\0") || parts.some((p) => p === "" || p === "." || p === ".."))
    throw new TreePathError("not a plain workspace-relative path");
  // harness's own state (journals, keys of trust) is never part of a tree; git metadata, even a
  // repository the session made below the root, is recorded but never written by harness.
  if (parts[0]?.toLowerCase() === RESERVED_DIR || parts.some((p) => p.toLowerCase() === GIT_DIR_NAME))
    throw new TreePathError("inside .harness or .git, which harness never writes");
  return parts;
}

/** How a tree is read and written: with its directories (version 2 records) or without (older ones). */
export interface TreeMode {
  directories: boolean;
}

/** The held parent of `parts` (created with `create`), or undefined when a parent is not a real directory. */
function holdParent(root: string, parts: readonly string[], create: boolean): HeldDir | undefined {
  let dir = HeldDir.openRoot(root);
  try {
    for (const part of parts.slice(0, -1)) {
      let next: HeldDir;
      try {
        next = dir.dir(part);
      } catch (error) {
        if (!(error instanceof BeneathError)) throw error;
        if (error.code !== "NOT_FOUND" || !create) {
          if (error.code === "OUTSIDE")
            throw new TreePathError("a parent directory moved while it was opened");
          dir.close();
          return undefined;
        }
        mkdirSync(dir.at(part));
        next = dir.dir(part);
      }
      dir.close();
      dir = next;
    }
    return dir;
  } catch (error) {
    dir.close();
    throw error;
  }
}

/**
 * The entry at `path` now: null when nothing is there, a file's hash/size/exec, a symlink's
 * target, a directory (when the tree records directories), a special file by its kind, a file over
 * the record's limit by its size (the record holds no more of either), or TreePathError for a
 * directory in a tree that does not record them. A parent that is not a real directory (a link,
 * a file) means nothing can be at the path through it: null.
 */
export async function currentEntry(
  root: string,
  path: string,
  mode: TreeMode,
  maxBytes: number = RECORD_MAX_BYTES,
): Promise<{ entry: Entry | null; bytes?: Buffer }> {
  const parts = checkedParts(path);
  const dir = holdParent(root, parts, false);
  if (dir === undefined) return { entry: null };
  const name = parts[parts.length - 1] as string;
  try {
    const info = dir.lstat(name);
    if (info === undefined) return { entry: null };
    if (info.isSymbolicLink()) return { entry: { link: dir.readlink(name) } };
    if (info.isDirectory()) {
      if (mode.directories) return { entry: DIR };
      throw new TreePathError("is a directory now");
    }
    const unread = unreadEntry(info, maxBytes);
    if (unread !== undefined) return { entry: unread };
    try {
      // Opened without following a link or blocking: a path swapped for a link or a FIFO since
      // the lstat is a conflict, never followed or waited on.
      const { bytes, stats } = dir.readFile(name, maxBytes);
      return {
        entry: { hash: sha256Hex(bytes), size: bytes.byteLength, exec: (stats.mode & 0o100) !== 0 },
        bytes,
      };
    } catch (error) {
      if (error instanceof BeneathError)
        throw new TreePathError(
          error.code === "LINK_IN_PATH"
            ? "became a symbolic link while being read"
            : "changed while being read",
        );
      throw error;
    }
  } finally {
    dir.close();
  }
}

/**
 * Put `entry` at `path`: a file's bytes or a symlink, written beside it under a temporary name
 * and renamed over it (a reader sees the old or the new, never half); a directory made; null
 * deletes it (a directory only when empty). Missing parents are created. Every step names its
 * file through the held parent directory, so a parent swapped for a link meanwhile changes
 * nothing outside. In a tree that does not record directories, a delete also removes the parent
 * directories it left empty (the record cannot say whether they were there before); one that does
 * has its own step for each of them. An entry whose content the record never held (a special file,
 * a file over the size limit) cannot be put: TreePathError.
 */
export async function putEntry(
  root: string,
  path: string,
  entry: Entry | null,
  mode: TreeMode,
  bytes?: Uint8Array,
): Promise<void> {
  const parts = checkedParts(path);
  const name = parts[parts.length - 1] as string;
  if (entry !== null && isUnread(entry))
    throw new TreePathError(
      "the record holds only its kind and size, not its content: it cannot be restored",
    );
  if (entry === null) {
    const dir = holdParent(root, parts, false);
    if (dir === undefined) return;
    try {
      const info = dir.lstat(name);
      if (info?.isDirectory() && mode.directories) rmdirSync(dir.at(name));
      else if (info !== undefined)
        try {
          unlinkSync(dir.at(name));
        } catch (error) {
          if (errnoCode(error) !== "ENOENT") throw error;
        }
    } finally {
      dir.close();
    }
    if (!mode.directories) pruneEmptyParents(root, parts);
    return;
  }
  const dir = holdParent(root, parts, true);
  if (dir === undefined) throw new TreePathError("a parent directory is a file or a symlink now");
  try {
    const existing = dir.lstat(name);
    if (isDir(entry)) {
      if (existing?.isDirectory()) return;
      if (existing !== undefined) unlinkSync(dir.at(name));
      mkdirSync(dir.at(name));
      return;
    }
    // A directory where a file goes back: only an empty one is replaced (its entries are steps of their own).
    if (existing?.isDirectory() && mode.directories) rmdirSync(dir.at(name));
    const temp = `.harness-undo-${randomBytes(6).toString("hex")}`;
    try {
      if ("link" in entry) {
        symlinkSync(entry.link, dir.at(temp));
      } else {
        if (bytes === undefined) throw new TreePathError("no content to restore");
        const base = existing?.isFile() ? existing.mode & 0o666 : 0o644;
        const fileMode = entry.exec ? base | ((base & 0o444) >> 2) : base;
        const fd = openSync(dir.at(temp), "wx", fileMode);
        try {
          writeSync(fd, bytes);
          fchmodSync(fd, fileMode);
          fsyncSync(fd);
        } finally {
          closeSync(fd);
        }
      }
      renameSync(dir.at(temp), dir.at(name));
    } catch (error) {
      try {
        unlinkSync(dir.at(temp));
      } catch {
        // never made, or already renamed
      }
      throw error;
    }
  } finally {
    dir.close();
  }
}

/** Remove the parents a delete left empty, each through its held parent (never through a link). */
function pruneEmptyParents(root: string, parts: readonly string[]): void {
  for (let depth = parts.length - 1; depth > 0; depth--) {
    const dir = holdParent(root, parts.slice(0, depth), false);
    if (dir === undefined) return;
    try {
      rmdirSync(dir.at(parts[depth - 1] as string));
    } catch {
      return; // not empty (or gone, or a link): the directories above are not empty either
    } finally {
      dir.close();
    }
  }
}
