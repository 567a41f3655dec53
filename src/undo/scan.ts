import { lstat, readdir, readFile, readlink } from "node:fs/promises";
import { join } from "node:path";
import { sha256Hex } from "../shared/hash.js";
import type { Tree } from "./entry.js";

/** What a tree never holds, whatever the session's configured excludes say: harness's own state and git's. */
export const DEFAULT_EXCLUDED = [".git/", ".harness/"] as const;

/**
 * The workspace's tree now: every regular file (hash, size, exec) and symlink (target), by
 * workspace-relative POSIX path; directories matching `excluded` ("NAME/" a directory of that
 * name at any depth, otherwise a relative path and everything under it) are left out, as are
 * sockets and other special files. Hashes every file: for an audit, not a hot path.
 */
export async function scanTree(root: string, excluded: readonly string[] = DEFAULT_EXCLUDED): Promise<Tree> {
  const dirNames = new Set(excluded.filter((e) => e.endsWith("/")).map((e) => e.slice(0, -1)));
  const paths = new Set(excluded.filter((e) => !e.endsWith("/")));
  const tree: Tree = new Map();
  const walk = async (dir: string, prefix: string): Promise<void> => {
    const names = (await readdir(dir)).sort();
    for (const name of names) {
      const path = prefix === "" ? name : `${prefix}/${name}`;
      if (paths.has(path)) continue;
      const full = join(dir, name);
      const info = await lstat(full);
      if (info.isDirectory()) {
        if (!dirNames.has(name) && !dirNames.has(path)) await walk(full, path);
      } else if (info.isSymbolicLink()) {
        tree.set(path, { link: await readlink(full) });
      } else if (info.isFile()) {
        const bytes = await readFile(full);
        tree.set(path, { hash: sha256Hex(bytes), size: bytes.byteLength, exec: (info.mode & 0o111) !== 0 });
      }
    }
  };
  await walk(root, "");
  return tree;
}
