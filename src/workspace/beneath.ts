import {
  closeSync,
  constants,
  type Dirent,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  type Stats,
} from "node:fs";
import path from "node:path";
import { CodedError } from "../shared/coded-error.js";
import { errnoCode } from "../shared/errno.js";
import { descriptorPath, openedPath } from "./opened-path.js";

/**
 * Every read harness does on the host under a workspace (the record's walks, audit, undo, fork,
 * proposals apply, kept copies) goes through this module, which reads only what lies beneath the
 * root and never through a symbolic link.
 *
 * A path is resolved one component at a time from an open directory descriptor: each component is
 * opened through the descriptor of the one before (`/proc/self/fd/N/name`, which the kernel looks
 * up in the open directory, not by path) with O_NOFOLLOW, so a component that is a link fails the
 * open instead of being followed. What was opened is then confirmed from the kernel
 * (`/proc/self/fd`) to be exactly `root/rel`: a directory renamed elsewhere while it was held is
 * refused too. Files are opened O_NONBLOCK (a FIFO is never waited on) and read only when the
 * descriptor is a regular file. Node has no openat2 (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS); this
 * is the same guarantee from the calls it has.
 *
 * Where /proc is absent (not Linux) the components are opened by path, each with O_NOFOLLOW: a
 * link as the last component is still refused, a parent swapped for a link between two opens is
 * not caught.
 */

const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const NONBLOCK = constants.O_NONBLOCK ?? 0;
const FILE_FLAGS = constants.O_RDONLY | NOFOLLOW | NONBLOCK;
const DIR_FLAGS = FILE_FLAGS | (constants.O_DIRECTORY ?? 0);

export type BeneathErrorCode =
  /** A component is a symbolic link (or became one): never followed. */
  | "LINK_IN_PATH"
  /** A parent component is not a directory. */
  | "NOT_A_DIRECTORY"
  /** What was opened is not where the path says (moved or swapped while it was opened). */
  | "OUTSIDE"
  /** The path is not a plain relative path (empty, `.`, `..`, NUL). */
  | "INVALID_PATH"
  /** The final entry is not a regular file (a directory, FIFO, socket or device). */
  | "NOT_REGULAR"
  | "NOT_FOUND";

export class BeneathError extends CodedError<BeneathErrorCode> {
  override readonly name = "BeneathError";
  constructor(
    code: BeneathErrorCode,
    /** The workspace-relative path (never a host path). */
    readonly rel: string,
    message: string,
  ) {
    super(code, message);
  }
}

/** A relative POSIX path's components, checked: no empty, `.` or `..` component, no NUL. */
export function beneathParts(rel: string): string[] {
  if (rel === "" || rel === ".") return [];
  const parts = rel.split("/");
  if (rel.includes("\0") || parts.some((p) => p === "" || p === "." || p === ".."))
    throw new BeneathError("INVALID_PATH", rel, `${JSON.stringify(rel)} is not a plain relative path`);
  return parts;
}

let procWorks: boolean | undefined;

/** Whether descriptors can be confirmed and named through /proc (Linux). */
function procAvailable(fd: number): boolean {
  if (procWorks === undefined) procWorks = openedPath(fd) !== undefined;
  return procWorks;
}

/**
 * A directory under the root, held open: everything below it is named through its descriptor.
 * Close it when done (or use `withRoot`).
 */
export class HeldDir {
  private closed = false;

  private constructor(
    readonly fd: number,
    /** The root it lies under (a real absolute path). */
    readonly root: string,
    /** Its path relative to the root ("" for the root). */
    readonly rel: string,
    /** Its stat, from the descriptor. */
    readonly stats: Stats,
    private readonly viaProc: boolean,
  ) {}

  /** Open the root itself (a real path: its own components are not checked, it was resolved once). */
  static openRoot(root: string): HeldDir {
    const fd = openSync(root, DIR_FLAGS);
    try {
      const viaProc = procAvailable(fd);
      if (viaProc && openedPath(fd) !== root)
        throw new BeneathError("OUTSIDE", ".", "the workspace root is not where it was opened");
      return new HeldDir(fd, root, "", fstatSync(fd), viaProc);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  private absPath: string | undefined;

  /** Where this directory is expected to be on the host. */
  get abs(): string {
    this.absPath ??= this.rel === "" ? this.root : path.join(this.root, this.rel);
    return this.absPath;
  }

  /** A path the kernel resolves from the held directory (the descriptor, not its name). */
  get path(): string {
    return this.viaProc ? descriptorPath(this.fd) : this.abs;
  }

  /** A path to `name` inside this directory, resolved from the descriptor. */
  at(name: string): string {
    return `${this.path}/${name}`;
  }

  private relOf(name: string): string {
    return this.rel === "" ? name : `${this.rel}/${name}`;
  }

  /** The names in this directory (the one held, whatever is at its path now). */
  list(): string[] {
    return readdirSync(this.path);
  }

  /**
   * The names in this directory with whether each was a directory when listed (the kernel's
   * entry type, no stat per name). Only a hint: the name may be replaced by the time it is opened,
   * and `dir` refuses anything that is not a directory then.
   */
  listTyped(): Dirent[] {
    return readdirSync(this.path, { withFileTypes: true });
  }

  /** The entry `name` itself (a link is not followed); undefined when absent. */
  lstat(name: string): Stats | undefined {
    try {
      return lstatSync(this.at(name));
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return undefined;
      throw error;
    }
  }

  /**
   * The entry `name` looked up by its host path (`root/rel/name`), not through the descriptor:
   * about half the kernel's work of a lookup through /proc. Only a hint, never a reason to read
   * anything: a parent swapped for a link meanwhile makes it describe something else. Its one use
   * is to find a file unchanged since the record last hashed it, which needs the same device,
   * inode, change time, size, mtime and mode as then, so the same file, however it was reached.
   * Undefined when absent.
   */
  statHint(name: string): Stats | undefined {
    try {
      return lstatSync(`${this.abs}/${name}`, { throwIfNoEntry: false });
    } catch {
      return undefined;
    }
  }

  /** The target text of the link `name` (never followed). */
  readlink(name: string): string {
    return readlinkSync(this.at(name));
  }

  /** The subdirectory `name`, held; BeneathError when it is a link, not a directory, or moved. */
  dir(name: string): HeldDir {
    const rel = this.relOf(name);
    const fd = openChecked(this.at(name), rel, DIR_FLAGS);
    try {
      const expected = path.join(this.root, rel);
      if (this.viaProc && openedPath(fd) !== expected)
        throw new BeneathError("OUTSIDE", rel, `${JSON.stringify(rel)} moved while it was opened`);
      return new HeldDir(fd, this.root, rel, fstatSync(fd), this.viaProc);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /**
   * The file `name`, opened without following a link or blocking, confirmed to be `root/rel`.
   * The caller closes the descriptor. `stats` tells the caller what it is (a FIFO opened
   * O_NONBLOCK is not waited on; the caller reads only a regular file).
   */
  open(name: string): { fd: number; stats: Stats } {
    const rel = this.relOf(name);
    const fd = openChecked(this.at(name), rel, FILE_FLAGS);
    try {
      if (this.viaProc && openedPath(fd) !== path.join(this.root, rel))
        throw new BeneathError("OUTSIDE", rel, `${JSON.stringify(rel)} moved while it was opened`);
      return { fd, stats: fstatSync(fd) };
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /** A regular file's bytes (BeneathError NOT_REGULAR for anything else), up to `limit` bytes. */
  readFile(name: string, limit = Number.POSITIVE_INFINITY): { bytes: Buffer; stats: Stats } {
    const { fd, stats } = this.open(name);
    try {
      if (!stats.isFile())
        throw new BeneathError(
          "NOT_REGULAR",
          this.relOf(name),
          `${JSON.stringify(this.relOf(name))} is not a regular file`,
        );
      return { bytes: readAll(fd, stats.size, limit, this.relOf(name)), stats };
    } finally {
      closeSync(fd);
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }
}

function openChecked(at: string, rel: string, flags: number): number {
  try {
    return openSync(at, flags);
  } catch (error) {
    const code = errnoCode(error);
    // A link opened O_NOFOLLOW | O_DIRECTORY fails as "not a directory": told apart by an lstat.
    if (code === "ELOOP" || (code === "ENOTDIR" && isLink(at)))
      throw new BeneathError("LINK_IN_PATH", rel, `${JSON.stringify(rel)} is a symbolic link: not followed`);
    if (code === "ENOTDIR")
      throw new BeneathError("NOT_A_DIRECTORY", rel, `${JSON.stringify(rel)} is not a directory`);
    if (code === "ENOENT") throw new BeneathError("NOT_FOUND", rel, `${JSON.stringify(rel)} does not exist`);
    throw error;
  }
}

function isLink(at: string): boolean {
  try {
    return lstatSync(at).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The file behind `fd` whole, refusing past `limit` bytes (it may grow while it is read). */
function readAll(fd: number, sizeHint: number, limit: number, rel: string): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  const buffer = Buffer.allocUnsafe(Math.min(Math.max(sizeHint + 1, 64 * 1024), 1024 * 1024));
  for (;;) {
    const read = readSync(fd, buffer, 0, buffer.length, total);
    if (read === 0) break;
    total += read;
    if (total > limit)
      throw new BeneathError("NOT_REGULAR", rel, `${JSON.stringify(rel)} is over the size limit`);
    chunks.push(Buffer.from(buffer.subarray(0, read)));
  }
  return Buffer.concat(chunks, total);
}

/** Run `use` with the root held open, closed after. */
export function withRoot<T>(root: string, use: (dir: HeldDir) => T): T {
  const held = HeldDir.openRoot(root);
  try {
    return use(held);
  } finally {
    held.close();
  }
}

/**
 * The directory holding `rel`, held, and the final name; BeneathError when a parent is a link,
 * not a directory, missing or moved. The caller closes it.
 */
export function openParent(root: string, rel: string): { dir: HeldDir; name: string } {
  const parts = beneathParts(rel);
  const name = parts.pop();
  if (name === undefined) throw new BeneathError("INVALID_PATH", rel, "the root itself has no parent");
  let dir = HeldDir.openRoot(root);
  try {
    for (const part of parts) {
      const next = dir.dir(part);
      dir.close();
      dir = next;
    }
  } catch (error) {
    dir.close();
    throw error;
  }
  return { dir, name };
}

/** The entry at `rel` (not followed), or undefined when it or a real-directory parent is absent. */
export function lstatBeneath(root: string, rel: string): Stats | undefined {
  let opened: { dir: HeldDir; name: string };
  try {
    opened = openParent(root, rel);
  } catch (error) {
    if (error instanceof BeneathError && error.code === "NOT_FOUND") return undefined;
    throw error;
  }
  try {
    return opened.dir.lstat(opened.name);
  } finally {
    opened.dir.close();
  }
}

/** A regular file's bytes at `rel`, read beneath the root (see HeldDir.readFile). */
export function readFileBeneath(root: string, rel: string, limit?: number): { bytes: Buffer; stats: Stats } {
  const { dir, name } = openParent(root, rel);
  try {
    return dir.readFile(name, limit);
  } finally {
    dir.close();
  }
}

/** A link's target at `rel`, read beneath the root. */
export function readlinkBeneath(root: string, rel: string): string {
  const { dir, name } = openParent(root, rel);
  try {
    return dir.readlink(name);
  } finally {
    dir.close();
  }
}

/** The directory at `rel` held (the root for ""), for listing or walking. The caller closes it. */
export function openDirBeneath(root: string, rel: string): HeldDir {
  if (beneathParts(rel).length === 0) return HeldDir.openRoot(root);
  const { dir, name } = openParent(root, rel);
  try {
    return dir.dir(name);
  } finally {
    dir.close();
  }
}
