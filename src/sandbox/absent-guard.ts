import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import { parseJsonObject } from "../shared/json.js";
import { ownerLiveness, parseProcessOwner, thisProcess } from "../shared/process-owner.js";
import { RESERVED_DIR } from "../workspace/fs.js";
import { excludeStateDirFromGit } from "../workspace/git-exclude.js";
import { realOrUndefined } from "./stat.js";

/**
 * Protected names that do not exist yet (no harness.config.json, no HEAD at the root, a hook
 * script not written yet) must stay absent: a sandboxed command must not create them for the host
 * to obey later. The sandbox cannot refuse them with a mount: a mount needs a mount point, and
 * bwrap makes a missing one by creating it in the host directory the workspace bind shows, so an
 * empty `HEAD` or `harness.config.json` would appear in the user's workspace for as long as the
 * command ran, and stay there when harness was killed. The workspace root itself must stay
 * writable (`npm install`, `sed -i` make new root entries), so neither a read-only parent nor a
 * tmpfs over it can refuse them either.
 *
 * So nothing is mounted for them; they are guarded instead, on the host, by harness:
 *
 * 1. Before the command starts, the names it must not create are written to a guard file in the
 *    workspace's `.harness/guards/` (the sandbox hides `.harness`: no command can read or change it).
 * 2. When the command has ended (its whole pid namespace is gone), whatever now exists at a guarded
 *    name is moved to `.harness/quarantine/STAMP/` (never deleted: the user may want it back) and
 *    the guard file is removed. The executor reports the moves with the command's result.
 * 3. Before any sandboxed process starts, and whenever harness opens the workspace (before it reads
 *    the project config), every guard file's names are checked the same way: a name a still running
 *    sandboxed process (an MCP server) created is moved before a hook or the next command can run
 *    it, and a guard left by a harness that was killed mid-command is settled and removed.
 *
 * The moves happen only on the host, through directories that are confirmed to be the workspace's
 * own (a parent that became a link is not followed).
 */

const GUARDS_DIR = "guards";
const QUARANTINE_DIR = "quarantine";
const MAX_GUARD_BYTES = 64 * 1024;

export interface Quarantined {
  /** Workspace-relative path the command created. */
  path: string;
  /** Workspace-relative path it was moved to (under `.harness/quarantine/`). */
  movedTo: string;
}

export interface AbsentGuard {
  /** After the command: move what appeared at a guarded name, remove the guard file. Once. */
  settle(): Quarantined[];
}

/** Start guarding `absent` (workspace-relative) in `workspace` (canonical) for one command. */
export function guardAbsent(workspace: string, absent: readonly string[]): AbsentGuard {
  if (absent.length === 0) return { settle: () => [] };
  const guardsDir = stateSubdir(workspace, GUARDS_DIR, true);
  let file: string | undefined;
  if (guardsDir !== undefined) {
    file = path.join(guardsDir, `${process.pid}-${randomBytes(6).toString("hex")}.json`);
    const record = JSON.stringify({ ...thisProcess(), paths: absent });
    const fd = openSync(
      file,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      writeSync(fd, record);
    } finally {
      closeSync(fd);
    }
  }
  let settled: Quarantined[] | undefined;
  return {
    settle: () => {
      if (settled !== undefined) return settled;
      settled = quarantine(workspace, absent);
      if (file !== undefined) unlinkQuietly(file);
      return settled;
    },
  };
}

/**
 * Make the workspace's `.harness/guards` (and `.harness`, kept out of git status, when missing)
 * before a sandboxed process starts; false when `.harness` is not a real directory.
 */
export function prepareGuards(workspace: string): boolean {
  return stateSubdir(workspace, GUARDS_DIR, true) !== undefined;
}

/**
 * Check every guard file of the workspace: move what appeared at a guarded name; remove the
 * guard files whose harness is gone. Never throws.
 */
export function settleGuards(workspace: string): Quarantined[] {
  const guardsDir = stateSubdir(workspace, GUARDS_DIR, false);
  if (guardsDir === undefined) return [];
  const moved: Quarantined[] = [];
  let names: string[];
  try {
    names = readdirSync(guardsDir).sort();
  } catch {
    return [];
  }
  for (const name of names) {
    const file = path.join(guardsDir, name);
    const guard = readGuard(file);
    if (guard === undefined) {
      // Not one harness wrote (or torn by a crash mid-write, before its command started).
      unlinkQuietly(file);
      continue;
    }
    moved.push(...quarantine(workspace, guard.paths));
    if (ownerLiveness(guard.owner).state === "gone") unlinkQuietly(file);
  }
  return moved;
}

function readGuard(
  file: string,
): { owner: NonNullable<ReturnType<typeof parseProcessOwner>>; paths: string[] } | undefined {
  const text = readBounded(file, MAX_GUARD_BYTES);
  const record = text === undefined ? undefined : parseJsonObject(text);
  if (record === undefined) return undefined;
  const owner = parseProcessOwner(record);
  const paths = record.paths;
  if (owner === undefined || !Array.isArray(paths)) return undefined;
  const valid = paths.filter((p): p is string => typeof p === "string" && isPlainRelative(p));
  return { owner, paths: valid };
}

/** A relative path without `.`/`..` components, not into `.harness`: what protectedMounts guards. */
function isPlainRelative(relative: string): boolean {
  if (relative === "" || path.isAbsolute(relative)) return false;
  const parts = relative.split("/");
  return parts.every((part) => part !== "" && part !== "." && part !== "..") && parts[0] !== RESERVED_DIR;
}

function quarantine(workspace: string, paths: readonly string[]): Quarantined[] {
  const moved: Quarantined[] = [];
  let into: string | undefined;
  for (const relative of paths) {
    const target = path.join(workspace, relative);
    try {
      lstatSync(target);
    } catch {
      continue;
    }
    // Only through the workspace's own directories: a parent the command replaced by a link
    // leads elsewhere, and what lies there is not the command's to lose.
    const parent = path.dirname(target);
    if (realOrUndefined(parent) !== parent) continue;
    into ??= quarantineDir(workspace);
    if (into === undefined) return moved;
    const destination = path.join(into, encodeURIComponent(relative));
    try {
      renameSync(target, destination);
      moved.push({ path: relative, movedTo: path.relative(workspace, destination) });
    } catch {
      // Gone meanwhile, or not movable: the next check tries again.
    }
  }
  return moved;
}

function quarantineDir(workspace: string): string | undefined {
  const base = stateSubdir(workspace, QUARANTINE_DIR, true);
  if (base === undefined) return undefined;
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace(/\..*$/, "");
  const dir = path.join(base, `${stamp}-${randomBytes(3).toString("hex")}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
    return dir;
  } catch {
    return undefined;
  }
}

/**
 * `.harness/NAME` as a real directory (created when `create`), or undefined when `.harness` or
 * it is anything else (a link would lead harness's writes out of the workspace). A `.harness`
 * harness creates here is kept out of `git status` like one the CLI creates.
 */
function stateSubdir(workspace: string, name: string, create: boolean): string | undefined {
  const state = path.join(workspace, RESERVED_DIR);
  const dir = path.join(state, name);
  const made = ensureDirectory(state, create);
  if (made === false) return undefined;
  if (made === "created") excludeStateDirFromGit(workspace);
  return ensureDirectory(dir, create) === false ? undefined : dir;
}

/** Whether `dir` is a real directory (created now: "created"). */
function ensureDirectory(dir: string, create: boolean): boolean | "created" {
  try {
    return lstatSync(dir).isDirectory();
  } catch {
    if (!create) return false;
    try {
      mkdirSync(dir, { mode: 0o700 });
      return lstatSync(dir).isDirectory() ? "created" : false;
    } catch {
      return false;
    }
  }
}

/** A guard file's text, up to `limit` bytes; undefined when it is not a regular file. */
function readBounded(file: string, limit: number): string | undefined {
  try {
    const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      if (!fstatSync(fd).isFile()) return undefined;
      const buffer = Buffer.alloc(limit);
      return buffer.subarray(0, readSync(fd, buffer, 0, limit, 0)).toString("utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Gone already.
  }
}
