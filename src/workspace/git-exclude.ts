import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import { RESERVED_DIR } from "./fs.js";

/**
 * Keep harness's state directory out of `git status` without touching the user's `.gitignore`:
 * one line, `.harness/`, in the repository's own `info/exclude` (git reads it like a
 * `.gitignore` that is never committed). Unanchored, so a workspace in a subdirectory of the
 * repository, or a harness run inside harness's sandbox on such a subdirectory, is covered too.
 *
 * Written by harness on the host only, when it opens a workspace; the sandbox shows every `.git`
 * read-only, so a nested harness finds the line there or writes nothing. Best effort: a
 * repository harness cannot find or write safely is left alone (the user sees `.harness/` in
 * `git status`, nothing worse).
 *
 * Where: the nearest of the workspace and its ancestors that holds a `.git` entry, as git finds
 * it. A `.git` directory is the git dir; a `.git` file (`gitdir: PATH`, a worktree or a submodule)
 * names it, and its `commondir` names the repository's common dir, whose `info/exclude` git reads.
 * A workspace can come from anywhere, so its `.git` file can name any directory: harness writes
 * only into a directory that has a git dir's shape (a `HEAD` file and `objects/` and `refs/`
 * directories, none of them links), into an `info` that is a real directory, through a file
 * opened without following a link. A `.git` that is itself a link is not followed.
 */

export const STATE_EXCLUDE_LINE = `${RESERVED_DIR}/`;
/** Lines that already keep `.harness` out at any depth. */
const COVERING = new Set([STATE_EXCLUDE_LINE, RESERVED_DIR, `**/${RESERVED_DIR}/`, `**/${RESERVED_DIR}`]);
/** More than any exclude file a person writes; a larger one is left alone. */
const MAX_EXCLUDE_BYTES = 1024 * 1024;

export type ExcludeOutcome = "added" | "present" | "no_repository" | "skipped";

/** Make sure the repository around `root` (canonical path) excludes `.harness/`. Never throws. */
export function excludeStateDirFromGit(root: string): ExcludeOutcome {
  try {
    const common = repositoryCommonDir(root);
    if (common === undefined) return "no_repository";
    if (common === "unsafe") return "skipped";
    return appendExclude(common);
  } catch {
    return "skipped";
  }
}

/** The common git dir of the repository `root` lies in, "unsafe" when it is found but not trusted. */
export function repositoryCommonDir(root: string): string | "unsafe" | undefined {
  let current = path.resolve(root);
  for (;;) {
    const dotGit = path.join(current, ".git");
    const stats = lstatOrUndefined(dotGit);
    if (stats !== undefined) {
      if (stats.isDirectory()) return gitDirShaped(dotGit) ? dotGit : "unsafe";
      if (!stats.isFile()) return "unsafe";
      const gitDir = gitFileTarget(dotGit);
      if (gitDir === undefined || !gitDirShaped(gitDir, false)) return "unsafe";
      const common = commonDirOf(gitDir);
      return common !== undefined && gitDirShaped(common) ? common : "unsafe";
    }
    const parent = path.dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

/** The directory a `gitdir: PATH` file names (relative to the file's directory), if readable. */
function gitFileTarget(file: string): string | undefined {
  const text = readSmallFile(file, 4096);
  const match = text === undefined ? null : /^gitdir: (.+?)\r?\n?$/.exec(text);
  if (match === null) return undefined;
  return path.resolve(path.dirname(file), match[1] as string);
}

/** A worktree's git dir names the repository's common dir in `commondir`; others are their own. */
function commonDirOf(gitDir: string): string | undefined {
  const stats = lstatOrUndefined(path.join(gitDir, "commondir"));
  if (stats === undefined) return gitDir;
  if (!stats.isFile()) return undefined;
  const text = readSmallFile(path.join(gitDir, "commondir"), 4096)?.trim();
  if (text === undefined || text === "") return undefined;
  return path.resolve(gitDir, text);
}

/**
 * A git dir's shape: a regular `HEAD` and real `objects/` and `refs/` directories (a worktree's
 * git dir has no `objects/` of its own: `full` false asks for `HEAD` only).
 */
function gitDirShaped(dir: string, full = true): boolean {
  if (lstatOrUndefined(dir)?.isDirectory() !== true) return false;
  if (lstatOrUndefined(path.join(dir, "HEAD"))?.isFile() !== true) return false;
  if (!full) return true;
  return ["objects", "refs"].every((name) => lstatOrUndefined(path.join(dir, name))?.isDirectory() === true);
}

function appendExclude(common: string): ExcludeOutcome {
  const info = path.join(common, "info");
  const infoStats = lstatOrUndefined(info);
  if (infoStats !== undefined && !infoStats.isDirectory()) return "skipped";
  const file = path.join(info, "exclude");
  const fileStats = lstatOrUndefined(file);
  let text = "";
  if (fileStats !== undefined) {
    if (!fileStats.isFile() || fileStats.size > MAX_EXCLUDE_BYTES) return "skipped";
    const read = readSmallFile(file, MAX_EXCLUDE_BYTES + 1);
    if (read === undefined) return "skipped";
    text = read;
  }
  // Read before any write: a nested harness sees `.git` read-only and needs to write nothing.
  if (text.split(/\r?\n/).some((line) => COVERING.has(line.trim()))) return "present";
  if (infoStats === undefined) mkdirSync(info, { mode: 0o755 });
  const fd = openSync(
    file,
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    0o644,
  );
  try {
    if (!fstatSync(fd).isFile()) return "skipped";
    const separator = text === "" || text.endsWith("\n") ? "" : "\n";
    writeSync(fd, `${separator}# harness's state directory (added by harness)\n${STATE_EXCLUDE_LINE}\n`);
    return "added";
  } finally {
    closeSync(fd);
  }
}

function readSmallFile(file: string, limit: number): string | undefined {
  try {
    const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const stats = fstatSync(fd);
      if (!stats.isFile()) return undefined;
      const buffer = Buffer.alloc(Math.min(limit, stats.size));
      let filled = 0;
      while (filled < buffer.length) {
        const n = readSync(fd, buffer, filled, buffer.length - filled, filled);
        if (n === 0) break;
        filled += n;
      }
      return buffer.subarray(0, filled).toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

function lstatOrUndefined(target: string): import("node:fs").Stats | undefined {
  try {
    return lstatSync(target);
  } catch {
    return undefined;
  }
}
