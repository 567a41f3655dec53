import { lstat, readdir, readFile, readlink } from "node:fs/promises";
import { join } from "node:path";
import { sha256Hex } from "../shared/hash.js";
import type { Entry, Manifest } from "../workspace/manifest.js";
import { TreeExcludes } from "../workspace/tree-excludes.js";

/**
 * The workspace's tree now, for an audit: every regular file and symlink under the same excludes
 * the recording used (`workspace.base`'s `excluded`), like `TreeSnapshot.take`, but with every
 * file read and hashed: a proof trusts no stat cache kept in the workspace, and writes nothing.
 */
export async function scanTree(root: string, excluded: readonly string[]): Promise<Manifest> {
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
        if (!excludes.excludesDir(rel, name)) await walk(full, `${rel}/`);
      } else if ((info.isFile() || info.isSymbolicLink()) && !excludes.excludesFile(rel, name)) {
        if (info.isSymbolicLink()) tree.set(rel, { link: await readlink(full) });
        else {
          const bytes = await readFile(full);
          tree.set(rel, { hash: sha256Hex(bytes), size: bytes.byteLength, exec: (info.mode & 0o100) !== 0 });
        }
      }
    }
  };
  await walk(root, "");
  return tree;
}
