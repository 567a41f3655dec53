import { lstatSync, mkdirSync, readdirSync } from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";
import { errnoCode, errnoText } from "../shared/errno.js";
import { sessionsDirOf } from "./session-path.js";
import { JournalError } from "./store.js";

/**
 * Make sure a workspace's `.harness` state directory is harness's own before anything is read
 * from or written to it: real directories and regular files only, no symbolic link anywhere in
 * it, and nothing else (a FIFO named `events.jsonl` would hang every reader).
 *
 * Why: the directory can come with the repository. A shipped `.harness -> /elsewhere`, a
 * `sessions/ID/artifacts -> /etc/cron.d` or an `events.jsonl -> ~/.bashrc` would make harness
 * write journals, locks and model-controlled artifact bytes outside the workspace (or truncate a
 * user file on repair), and an alias of `.harness` under another name would let the file tools
 * reach harness's state. Nothing inside a run can add a link later: the sandbox mounts `.harness`
 * read-only and the file tools refuse the name, so one check when the workspace is opened holds.
 *
 * Opening a workspace checks everything but the inside of each session directory (only that each
 * session is a real directory): a session's files are checked when that session is opened
 * (`checkSessionDir`), so the cost of opening a workspace does not grow with every artifact of
 * every session it ever recorded. Nor is the inside of `objects/` listed (a copy of every file
 * content the record ever kept: tens of thousands of entries on a large tree, listed at every
 * start): only that it is a real directory. Every read there goes through the beneath helpers
 * (no link followed, a FIFO never waited on, a regular file only), every write is a new
 * randomly named file renamed into place (a planted link is replaced, never written through),
 * and an object is used only when its bytes hash to its name.
 *
 * Creates `.harness/sessions` when missing. Throws JournalError("UNTRUSTED") naming the entry.
 */
export function prepareStateDir(harnessDir: string): void {
  guarded(() => {
    refuseUnlessDirectory(harnessDir, harnessDir);
    mkdirIfMissing(harnessDir);
    const sessionsDir = sessionsDirOf(harnessDir);
    refuseUnlessDirectory(sessionsDir, harnessDir);
    mkdirIfMissing(sessionsDir);
    walk(harnessDir, harnessDir, sessionsDir, join(harnessDir, OBJECTS_DIR));
  });
}

/**
 * The same check for one session's directory, before its journal or artifacts are touched. A
 * sub-agent's directory lies inside its parent's: each directory on the way below `sessions/`
 * must be a real one too, or a link there would lead the sub-agent's writes elsewhere.
 */
export function checkSessionDir(harnessDir: string, sessionDir: string): void {
  guarded(() => {
    for (const dir of directoriesBelow(sessionsDirOf(harnessDir), sessionDir))
      refuseUnlessDirectory(dir, harnessDir);
    walk(sessionDir, harnessDir);
  });
}

/** Each directory from the one just below `top` down to `dir` (only `dir` when it is directly below). */
function directoriesBelow(top: string, dir: string): string[] {
  const inside = relative(top, dir);
  if (inside === "" || inside.startsWith("..") || isAbsolute(inside)) return [dir];
  const dirs: string[] = [];
  let current = top;
  for (const part of inside.split(sep)) {
    current = join(current, part);
    dirs.push(current);
  }
  return dirs;
}

function guarded(check: () => void): void {
  try {
    check();
  } catch (error) {
    if (error instanceof JournalError) throw error;
    const code = errnoText(error);
    throw new JournalError("IO", `cannot prepare the workspace's .harness directory (${code})`);
  }
}

/** The record's object store (workspace/tree-snapshot.ts): checked to be a directory, not listed. */
const OBJECTS_DIR = "objects";

/**
 * Refuse links and special files below `dir`; below `shallow`, only look at the entries
 * themselves; `opaque` must be a real directory, and is not looked into.
 */
function walk(dir: string, harnessDir: string, shallow?: string, opaque?: string): void {
  let entries: import("node:fs").Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    // Another harness process may remove a directory of its own (a lock's) while this one walks.
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return;
    throw error;
  }
  for (const entry of entries) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (dir !== shallow && full !== opaque) walk(full, harnessDir, shallow, opaque);
    } else if (!entry.isFile()) throw refusal(full, harnessDir, entry.isSymbolicLink());
  }
}

function refuseUnlessDirectory(path: string, harnessDir: string): void {
  let stats: import("node:fs").Stats;
  try {
    stats = lstatSync(path);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return;
    throw error;
  }
  if (!stats.isDirectory()) throw refusal(path, harnessDir, stats.isSymbolicLink());
}

function mkdirIfMissing(path: string): void {
  try {
    mkdirSync(path);
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw error;
  }
}

function refusal(path: string, harnessDir: string, symlink: boolean): JournalError {
  const inside = relative(harnessDir, path);
  const shown = JSON.stringify(inside === "" ? ".harness" : `.harness/${inside}`);
  const what = symlink ? "is a symbolic link" : "is not a regular file or directory";
  return new JournalError(
    "UNTRUSTED",
    `${shown} ${what}: harness's state directory must hold only its own files, or harness could be made ` +
      "to write journals and artifacts outside the workspace. It was not created by harness (a repository may " +
      "have shipped it); nothing was run. Remove it, or move the workspace's .harness directory away.",
  );
}
