import { lstatSync, readlinkSync, realpathSync, type Stats } from "node:fs";
import path from "node:path";
import { errnoCode } from "../shared/errno.js";
import { isReservedParts, isValidComponent, joinParts, quote, relativeParts } from "./boundary.js";
import { escapeError, mapNodeError } from "./disk-errors.js";
import { RESERVED_DIR, WorkspaceError } from "./fs.js";

/**
 * Where a workspace path really is on disk: the lexical boundary (boundary.ts), then the disk
 * stage. The deepest existing ancestor of the target is resolved with realpath and must stay
 * inside the (real) root, so a symlink or junction inside the workspace cannot lead a file tool
 * outside it. Dangling symlinks are followed by reading their target, so writing through one
 * cannot create a file outside either. The calls are synchronous: each takes microseconds in the
 * kernel but tens of microseconds through the thread pool.
 */

/** Symlink hops followed while resolving one path before giving up (as the kernel does). */
const MAX_SYMLINK_HOPS = 40;

export interface Located {
  /** Canonical workspace-relative POSIX path ("." for the root). */
  canonical: string;
  /** Absolute host path; every existing ancestor is symlink-free and inside the root. */
  abs: string;
}

/** Resolve `input` inside the real directory `root`; PATH_ESCAPE, INVALID_PATH, RESERVED_PATH. */
export function locate(root: string, input: string): Located {
  const parts = relativeParts(input);
  const abs = realTarget(root, root, parts, input, 0);
  const lexical = joinParts(parts);
  // The usual case: no symlink on the way, so the disk path is the checked input itself.
  if (abs === (parts.length === 0 ? root : joinVerbatim(root, parts))) return { canonical: lexical, abs };
  const relative = path.relative(root, abs);
  const canonicalParts = relative === "" ? [] : relative.split(path.sep);
  // The canonical path comes from the disk (through symlinks), so it gets the same rules.
  if (!canonicalParts.every(isValidComponent)) {
    throw new WorkspaceError(
      "INVALID_PATH",
      input,
      `${quote(input)} leads to a name that is not a valid workspace path`,
    );
  }
  if (isReservedParts(canonicalParts)) {
    throw new WorkspaceError(
      "RESERVED_PATH",
      input,
      `${quote(input)} leads into the reserved ${RESERVED_DIR} directory`,
    );
  }
  return { canonical: joinParts(canonicalParts), abs };
}

/**
 * The real location of `base/parts...`: the deepest existing prefix is resolved with realpath
 * and must lie inside the root; the missing rest is appended. `base` is a real directory;
 * `parts` may contain `..` only when it came from a symlink target, and is joined without
 * lexical normalization so the kernel, not string arithmetic, decides what `..` means.
 */
function realTarget(
  root: string,
  base: string,
  parts: readonly string[],
  input: string,
  hops: number,
): string {
  for (let i = parts.length; i >= 0; i--) {
    const candidate = joinVerbatim(base, parts.slice(0, i));
    let real: string;
    try {
      real = realpathSync.native(candidate);
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" && i > 0 && lstatOrUndefined(candidate)?.isSymbolicLink()) {
        return followDangling(root, base, parts, i, input, hops);
      }
      if (code === "ENOENT" || code === "ENOTDIR") continue;
      throw mapNodeError(error, input, "resolve");
    }
    if (!isInside(root, real)) throw escapeError(input);
    const rest = parts.slice(i);
    // A missing directory followed by `..` fails in the kernel too.
    if (rest.includes("..")) throw new WorkspaceError("NOT_FOUND", input, `${quote(input)} does not exist`);
    return path.join(real, ...rest);
  }
  throw new WorkspaceError("NOT_FOUND", input, "the workspace root no longer exists");
}

/** `base/parts[0..i)` is a symlink whose target does not exist: resolve where it would write. */
function followDangling(
  root: string,
  base: string,
  parts: readonly string[],
  i: number,
  input: string,
  hops: number,
): string {
  if (hops >= MAX_SYMLINK_HOPS) {
    throw new WorkspaceError("INVALID_PATH", input, `${quote(input)} has too many levels of symbolic links`);
  }
  const link = joinVerbatim(base, parts.slice(0, i));
  let target: string;
  let parent: string;
  try {
    target = readlinkSync(link);
    parent = realpathSync.native(joinVerbatim(base, parts.slice(0, i - 1)));
  } catch (error) {
    throw mapNodeError(error, input, "resolve");
  }
  if (!isInside(root, parent)) throw escapeError(input);
  const rest = parts.slice(i);
  if (path.isAbsolute(target)) {
    const { root: fsRoot } = path.parse(target);
    return realTarget(root, fsRoot, [...splitTarget(target.slice(fsRoot.length)), ...rest], input, hops + 1);
  }
  return realTarget(root, parent, [...splitTarget(target), ...rest], input, hops + 1);
}

function splitTarget(target: string): string[] {
  return target.split(/[\\/]/).filter((part) => part !== "" && part !== ".");
}

/** Join without collapsing `..` (path.join would resolve it lexically, not like the kernel). */
function joinVerbatim(base: string, parts: readonly string[]): string {
  if (parts.length === 0) return base;
  return base.endsWith(path.sep) ? base + parts.join(path.sep) : base + path.sep + parts.join(path.sep);
}

/** Whether the absolute host path `candidate` is `root` or below it. */
export function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return candidate.startsWith(prefix);
}

export function lstatOrUndefined(p: string): Stats | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}
