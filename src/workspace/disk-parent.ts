import { closeSync, mkdirSync, openSync } from "node:fs";
import { errnoCode } from "../shared/errno.js";
import { quote } from "./boundary.js";
import { DIRECTORY_FLAGS } from "./disk-io.js";
import { WorkspaceError } from "./fs.js";
import { descriptorPath, openedPath } from "./opened-path.js";

/**
 * The directory a write lands in, held open so that a concurrent symlink swap cannot redirect it.
 *
 * A write creates a temporary file and renames it over the target. Each of those calls resolves
 * its path again, and `rename` resolves its two paths separately: a process inside the workspace
 * that swaps a directory for a symlink to an outside directory between (or during) them could
 * make the rename move the new file outside, across directories of one file system. Checking the
 * temporary file after creating it does not help, since the rename happens later.
 *
 * So the parent is reached by walking from the root one component at a time, each opened with
 * O_NOFOLLOW through the descriptor of the one before (`/proc/self/fd/N/name` is resolved by the
 * kernel from the open directory, not by path), creating missing directories the same way. A
 * symlink met on the way fails the write. Every later call names its file through the final
 * descriptor, so the temporary file, the version check and the rename all act in the one
 * directory that was opened, whatever is swapped meanwhile. `components` come from `locate`,
 * which resolved existing ancestors with realpath: a legitimate path has no symlink left in it.
 *
 * Node has no openat/renameat; the /proc paths are how Linux offers the same guarantee. Where
 * /proc is absent the function returns undefined and callers fall back to plain paths (with the
 * check after opening that they always had).
 */
export interface HeldDirectory {
  /** A path that reaches `name` inside the held directory. */
  at(name: string): string;
  /** The held directory itself (for fsync). */
  readonly path: string;
  close(): void;
}

export function holdParentDirectory(
  root: string,
  components: readonly string[],
  p: string,
): HeldDirectory | undefined {
  let fd = openSync(root, DIRECTORY_FLAGS);
  if (openedPath(fd) === undefined) {
    closeSync(fd);
    return undefined;
  }
  try {
    for (const component of components) {
      const next = openChild(fd, component, p);
      closeSync(fd);
      fd = next;
    }
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  const held = descriptorPath(fd);
  return {
    at: (name) => `${held}/${name}`,
    path: held,
    close: () => closeSync(fd),
  };
}

function openChild(parent: number, component: string, p: string, attempt = 0): number {
  const child = `${descriptorPath(parent)}/${component}`;
  try {
    return openSync(child, DIRECTORY_FLAGS);
  } catch (error) {
    const code = errnoCode(error);
    // Created, then removed again before it could be opened: retried a few times, not forever.
    if (code === "ENOENT" && attempt < 3) {
      try {
        mkdirSync(child, 0o777);
      } catch (mkdirError) {
        if (errnoCode(mkdirError) !== "EEXIST") throw mkdirError;
      }
      return openChild(parent, component, p, attempt + 1);
    }
    if (code === "ENOTDIR") {
      throw new WorkspaceError("NOT_A_DIRECTORY", p, `a parent of ${quote(p)} is a file, not a directory`);
    }
    if (code === "ELOOP") {
      // Located a moment ago as a real directory: it was replaced by a symlink since.
      throw new WorkspaceError(
        "PATH_ESCAPE",
        p,
        `a parent of ${quote(p)} was replaced by a symbolic link while writing; nothing was written`,
      );
    }
    throw error;
  }
}
