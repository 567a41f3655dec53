import { readdir } from "node:fs/promises";
import path from "node:path";
import { RESERVED_DIR } from "../workspace/fs.js";
import {
  BARE_HEAD_NAME,
  GIT_DIR_NAME,
  PROJECT_CONFIG_NAME,
  type ProtectedPaths,
} from "../workspace/protected.js";
import { isWithin } from "./host-view.js";
import { lstatOrUndefined, realOrUndefined } from "./stat.js";

/**
 * How the sandbox applies the protected-path list (src/workspace/protected.ts) to a writable
 * workspace. Every protected entry that exists is bound read-only onto itself: a bind mount point
 * can be neither written, renamed, replaced nor removed, so `mv .git x`, `rm -rf .git` and
 * `echo > .git/config` all fail. A whole `.git` is read-only (decision: git in the sandbox can
 * read history, status and diffs, but `git add`/`git commit` fail; the user commits on the host,
 * where the change can be reviewed first).
 *
 * A protected name that does NOT exist yet (no `.git`, no harness.config.json, no HEAD at the
 * root, a hook script not written yet) gets no mount: a mount needs a mount point, and bwrap
 * creates a missing one in the host directory the workspace bind shows, which left empty `HEAD`
 * and `harness.config.json` files in the user's workspace (for good when harness was killed). Such
 * names are returned as `absent` (the highest missing component of each: `hooks` of a missing
 * `hooks/check.sh`, so creating the parents first does not get around it), and guarded on the host
 * (absent-guard.ts): whatever a command creates there is moved away before anything reads it.
 */

export interface ProtectedMounts {
  /** bwrap arguments, to come after the workspace bind: read-only binds of existing paths only. */
  args: string[];
  /** Workspace-relative protected names that do not exist: guarded, never mounted. */
  absent: string[];
}

/** Walks stop here: harness's own state, and no repository lives inside a `.git`. */
const SKIP_DIRS = new Set([RESERVED_DIR]);

export async function protectedMounts(
  workspace: string,
  protectedPaths: ProtectedPaths,
): Promise<ProtectedMounts> {
  const args: string[] = [];
  const absent: string[] = [];
  const bound = new Set<string>();
  const bindReadOnly = (target: string) => {
    if (bound.has(target)) return;
    bound.add(target);
    args.push("--ro-bind", target, target);
  };
  const protect = (relative: string) => {
    const target = path.join(workspace, relative);
    const stats = lstatOrUndefined(target);
    if (stats === undefined) {
      // Guard the highest missing component (`hooks` of a missing `hooks/check.sh`), so the
      // command cannot create the path by creating its parents first.
      const parts = relative.split("/");
      let depth = 1;
      while (
        depth < parts.length &&
        lstatOrUndefined(path.join(workspace, ...parts.slice(0, depth))) !== undefined
      )
        depth++;
      const missing = parts.slice(0, depth).join("/");
      if (lstatOrUndefined(path.dirname(path.join(workspace, missing)))?.isDirectory() !== true) return;
      if (!absent.includes(missing)) absent.push(missing);
      return;
    }
    // A symlink is protected where it leads, if that is inside the workspace (outside it, nothing
    // is writable anyway). The link itself cannot be replaced: its directory entry sits in a
    // writable directory, but the file tools refuse the name and git reads the target.
    const real = stats.isSymbolicLink() ? realOrUndefined(target) : target;
    if (real !== undefined && isWithin(real, workspace) && real !== workspace) bindReadOnly(real);
  };

  // A `.harness` directory is hidden, not only pinned, in every profile (harness-secrets.ts); the
  // sandbox makes one before a command starts (it holds the guards). Anything else by that name is
  // pinned.
  if (lstatOrUndefined(path.join(workspace, RESERVED_DIR))?.isDirectory() !== true) protect(RESERVED_DIR);
  protect(PROJECT_CONFIG_NAME);
  const gitDirs = await findGitEntries(workspace);
  if (!gitDirs.includes(GIT_DIR_NAME)) protect(GIT_DIR_NAME);
  // A HEAD at the root (with objects/ and refs/, which are ordinary names) would make a
  // workspace without `.git` a bare repository that host git obeys: guard it too.
  if (!gitDirs.includes(BARE_HEAD_NAME)) protect(BARE_HEAD_NAME);
  for (const relative of gitDirs) protect(relative);
  for (const file of protectedPaths.files) protect(file);
  return { args, absent };
}

/**
 * Workspace-relative paths of every `.git` entry (directory, file or link) and every `HEAD` file, at any depth. The
 * walk reads directories concurrently on the thread pool and does not block the event loop
 * (about 20 ms for a few thousand files, under a second for 60 000).
 */
async function findGitEntries(workspace: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (relative: string): Promise<void> => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = await readdir(path.join(workspace, relative), { withFileTypes: true });
    } catch {
      return;
    }
    const below: Promise<void>[] = [];
    for (const entry of entries) {
      const child = relative === "" ? entry.name : `${relative}/${entry.name}`;
      const lower = entry.name.toLowerCase();
      if (lower === GIT_DIR_NAME || (lower === BARE_HEAD_NAME.toLowerCase() && !entry.isDirectory())) {
        found.push(child);
        continue;
      }
      if (relative === "" && SKIP_DIRS.has(entry.name)) continue;
      // Symlinked directories are not followed: what they lead to inside the workspace is walked
      // under its own name.
      if (entry.isDirectory()) below.push(walk(child));
    }
    await Promise.all(below);
  };
  await walk("");
  return found.sort();
}
