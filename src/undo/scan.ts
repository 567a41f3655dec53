import { createHash } from "node:crypto";
import { closeSync, readSync } from "node:fs";
import { errnoCode } from "../shared/errno.js";
import { BeneathError, HeldDir } from "../workspace/beneath.js";
import { DIR, type Entry, type Manifest } from "../workspace/manifest.js";
import { RECORD_MAX_BYTES, unreadEntry } from "../workspace/tree-entry.js";
import { TreeExcludes } from "../workspace/tree-excludes.js";

/**
 * The workspace's tree now, for an audit: every regular file and symlink (and directory, for a
 * session that records them), every special file by its kind and every file over the record's
 * limit by its size, under the same excludes the recording used (`workspace.base`'s `excluded`),
 * like `TreeSnapshot.take`, but with every file read and hashed: a proof trusts no stat cache kept
 * in the workspace, and writes nothing. Read beneath the root through held directories
 * (workspace/beneath.ts): nothing is read through a link.
 */
export async function scanTree(
  root: string,
  excluded: readonly string[],
  mode: { directories: boolean },
  maxBytes: number = RECORD_MAX_BYTES,
): Promise<Manifest> {
  const excludes = new TreeExcludes(excluded);
  const tree = new Map<string, Entry>();
  const walk = (dir: HeldDir, prefix: string): void => {
    for (const name of dir.list()) {
      // The recording leaves out names that are not UTF-8 (they cannot be written down): so does this.
      if (name.includes("\ufffd")) continue;
      const rel = prefix + name;
      const info = dir.lstat(name);
      if (info === undefined) continue;
      if (info.isDirectory()) {
        if (excludes.excludesDir(rel, name)) continue;
        let below: HeldDir;
        try {
          below = dir.dir(name);
        } catch (error) {
          // Swapped for something else while the audit ran: not a directory the tree holds.
          if (error instanceof BeneathError) continue;
          throw error;
        }
        try {
          if (mode.directories) tree.set(rel, DIR);
          walk(below, `${rel}/`);
        } finally {
          below.close();
        }
        continue;
      }
      if (excludes.excludesFile(rel, name)) continue;
      if (info.isSymbolicLink()) {
        tree.set(rel, { link: dir.readlink(name) });
        continue;
      }
      const unread = unreadEntry(info, maxBytes);
      if (unread !== undefined) {
        tree.set(rel, unread);
        continue;
      }
      const hashed = hashFile(dir, name, maxBytes);
      if (hashed !== undefined) tree.set(rel, hashed);
    }
  };
  const held = HeldDir.openRoot(root);
  try {
    walk(held, "");
  } finally {
    held.close();
  }
  return tree;
}

/**
 * A file's entry, its bytes read in 1 MiB chunks (a repository's sparse gigabytes cost time, not
 * memory) through a descriptor opened beneath the root without following a link or blocking;
 * undefined when it is no longer a regular file, as the recording leaves it out; by its size alone
 * when it grew past the limit.
 */
function hashFile(dir: HeldDir, name: string, maxBytes: number): Entry | undefined {
  let opened: ReturnType<HeldDir["open"]>;
  try {
    opened = dir.open(name);
  } catch (error) {
    if (error instanceof BeneathError || errnoCode(error) === "ENXIO") return undefined;
    throw error;
  }
  const { fd, stats } = opened;
  try {
    if (!stats.isFile()) return undefined;
    const exec = (stats.mode & 0o100) !== 0;
    const hash = createHash("sha256");
    const buffer = Buffer.allocUnsafe(1024 * 1024);
    let size = 0;
    for (;;) {
      const read = readSync(fd, buffer, 0, buffer.length, size);
      if (read === 0) return { hash: hash.digest("hex"), size, exec };
      hash.update(buffer.subarray(0, read));
      size += read;
      if (size > maxBytes) return { oversize: true, size: stats.size, exec };
    }
  } finally {
    closeSync(fd);
  }
}
