import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { lstat, open, readdir, readlink } from "node:fs/promises";
import { join } from "node:path";
import { DIR, type Entry, type Manifest } from "../workspace/manifest.js";
import { TreeExcludes } from "../workspace/tree-excludes.js";
import { RECORD_MAX_BYTES } from "../workspace/tree-snapshot.js";

/**
 * The workspace's tree now, for an audit: every regular file and symlink (and directory, for a
 * session that records them) under the same excludes the recording used (`workspace.base`'s
 * `excluded`), like `TreeSnapshot.take`, but with every file read and hashed: a proof trusts no
 * stat cache kept in the workspace, and writes nothing.
 */
export async function scanTree(
  root: string,
  excluded: readonly string[],
  mode: { directories: boolean },
): Promise<Manifest> {
  const excludes = new TreeExcludes(excluded);
  const tree = new Map<string, Entry>();
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for (const name of await readdir(dir)) {
      // The recording leaves out names that are not UTF-8 (they cannot be written down): so does this.
      if (name.includes("\ufffd")) continue;
      const rel = prefix + name;
      const full = join(dir, name);
      const info = await lstat(full);
      if (info.isDirectory()) {
        if (!excludes.excludesDir(rel, name)) {
          if (mode.directories) tree.set(rel, DIR);
          await walk(full, `${rel}/`);
        }
      } else if ((info.isFile() || info.isSymbolicLink()) && !excludes.excludesFile(rel, name)) {
        if (info.isSymbolicLink()) tree.set(rel, { link: await readlink(full) });
        else {
          const hashed = await hashFile(full);
          if (hashed !== undefined) tree.set(rel, { ...hashed, exec: (info.mode & 0o100) !== 0 });
        }
      }
    }
  };
  await walk(root, "");
  return tree;
}

/**
 * A file's SHA-256 and size, read in 1 MiB chunks (a repository's sparse gigabytes cost time, not
 * memory), through a descriptor opened without following a link or blocking; undefined when it is
 * no longer a regular file or is over the recording's limit, as the recording leaves it out.
 */
async function hashFile(full: string): Promise<{ hash: string; size: number } | undefined> {
  const handle = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || stats.size > RECORD_MAX_BYTES) return undefined;
    const hash = createHash("sha256");
    const buffer = Buffer.allocUnsafe(1024 * 1024);
    let size = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, size);
      if (bytesRead === 0) return { hash: hash.digest("hex"), size };
      hash.update(buffer.subarray(0, bytesRead));
      size += bytesRead;
      if (size > RECORD_MAX_BYTES) return undefined;
    }
  } finally {
    await handle.close();
  }
}
