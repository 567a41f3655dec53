import { rmdirSync, statSync, unlinkSync } from "node:fs";
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
 * A protected name that does NOT exist yet (no `.git`, no harness.config.json, a hook script not
 * written yet) is sealed: an empty read-only directory (`.git`) or an empty file (anything else)
 * is mounted there, so the command cannot create it. The mount point bwrap has to create on the
 * host is removed again when the command ends (`removeSeals`); one left by a crash is harmless
 * (git ignores an empty `.git` directory, the config loader treats an empty harness.config.json
 * as absent, and the next run seals it again).
 */

export interface ProtectedMounts {
  /** bwrap arguments, to come after the workspace bind. */
  args: string[];
  /** Host paths this layout creates as mount points; remove them when the command ends. */
  seals: Seal[];
}

export interface Seal {
  path: string;
  kind: "directory" | "file";
}

/** Walks stop here: harness's own state, and no repository lives inside a `.git`. */
const SKIP_DIRS = new Set([RESERVED_DIR]);

export async function protectedMounts(
  workspace: string,
  protectedPaths: ProtectedPaths,
): Promise<ProtectedMounts> {
  const args: string[] = [];
  const seals: Seal[] = [];
  const bound = new Set<string>();
  const bindReadOnly = (target: string) => {
    if (bound.has(target)) return;
    bound.add(target);
    args.push("--ro-bind", target, target);
  };
  const protect = (relative: string, missing: Seal["kind"]) => {
    const target = path.join(workspace, relative);
    const stats = lstatOrUndefined(target);
    if (stats === undefined) {
      // Seal the highest missing component (`hooks` of a missing `hooks/check.sh`), so the
      // command cannot create the path by creating its parents first, and bwrap creates only
      // one mount point on the host.
      const parts = relative.split("/");
      let depth = 1;
      while (
        depth < parts.length &&
        lstatOrUndefined(path.join(workspace, ...parts.slice(0, depth))) !== undefined
      )
        depth++;
      const sealed = path.join(workspace, ...parts.slice(0, depth));
      if (lstatOrUndefined(path.dirname(sealed))?.isDirectory() !== true) return;
      const kind = depth === parts.length ? missing : "directory";
      if (seals.some((seal) => seal.path === sealed)) return;
      seals.push({ path: sealed, kind });
      if (kind === "directory") args.push("--tmpfs", sealed, "--remount-ro", sealed);
      else args.push("--ro-bind", "/dev/null", sealed);
      return;
    }
    // A symlink is protected where it leads, if that is inside the workspace (outside it, nothing
    // is writable anyway). The link itself cannot be replaced: its directory entry sits in a
    // writable directory, but the file tools refuse the name and git reads the target.
    const real = stats.isSymbolicLink() ? realOrUndefined(target) : target;
    if (real !== undefined && isWithin(real, workspace) && real !== workspace) bindReadOnly(real);
  };

  // A `.harness` directory is hidden, not only pinned, in every profile (harness-secrets.ts); a
  // missing one is sealed here so a command cannot create it.
  if (lstatOrUndefined(path.join(workspace, RESERVED_DIR))?.isDirectory() !== true)
    protect(RESERVED_DIR, "directory");
  protect(PROJECT_CONFIG_NAME, "file");
  const gitDirs = await findGitEntries(workspace);
  if (!gitDirs.includes(GIT_DIR_NAME)) protect(GIT_DIR_NAME, "directory");
  // A HEAD at the root (with objects/ and refs/, which are ordinary names) would make the
  // workspace a bare repository that host git obeys once the .git seal is gone: seal it too.
  if (!gitDirs.includes(BARE_HEAD_NAME)) protect(BARE_HEAD_NAME, "file");
  for (const relative of gitDirs) protect(relative, "directory");
  for (const file of protectedPaths.files) protect(file, "file");
  return { args, seals };
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

/**
 * Remove the mount points a command's seals left on the host, if they are still what the seal
 * created (an empty directory or an empty file). Best effort: a leftover is harmless.
 */
export function removeSeals(seals: readonly Seal[]): void {
  for (const seal of seals) {
    try {
      const stats = statSync(seal.path);
      if (seal.kind === "directory" && stats.isDirectory()) rmdirSync(seal.path);
      else if (seal.kind === "file" && stats.isFile() && stats.size === 0) unlinkSync(seal.path);
    } catch {
      // Gone already, not empty, or still mounted somewhere: leave it.
    }
  }
}
