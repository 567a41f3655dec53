import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  promises as fsp,
  fstatSync,
  lstatSync,
  openSync,
  read,
  readlinkSync,
  realpathSync,
  type Stats,
} from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import {
  checkGlobPattern,
  isReservedParts,
  isValidComponent,
  joinParts,
  quote,
  relativeParts,
} from "./boundary.js";
import { FileLockDirectoryError, type FileLockOptions, FileLockTimeout, withFileLock } from "./file-lock.js";
import {
  type DirEntry,
  type FileStat,
  type GlobOptions,
  RESERVED_DIR,
  WorkspaceError,
  type WorkspaceErrorCode,
  type WorkspaceFs,
  type WriteOptions,
} from "./fs.js";
import { descriptorPath, openedPath } from "./opened-path.js";
import { compareCodeUnits } from "./order.js";
import { DEFAULT_PROTECTED_PATHS, type ProtectedPaths } from "./protected.js";
import { versionOf } from "./version.js";

/** Symlink hops followed while resolving one path before giving up (as the kernel does). */
const MAX_SYMLINK_HOPS = 40;
// O_NOFOLLOW and O_NONBLOCK are POSIX-only; on Windows they are absent and 0 is harmless.
const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
const DIRECTORY_FLAGS = READ_FLAGS | (constants.O_DIRECTORY ?? 0);

interface Located {
  /** Canonical workspace-relative POSIX path ("." for the root). */
  canonical: string;
  /** Absolute host path; every existing ancestor is symlink-free and inside the root. */
  abs: string;
}

/**
 * The workspace on a real directory. Every operation applies the lexical boundary
 * (boundary.ts) and then the disk stage: the deepest existing ancestor of the target is resolved
 * with realpath and must stay inside the (real) root, so a symlink or junction inside the
 * workspace cannot lead a file tool outside it. Dangling symlinks are followed by reading their
 * target, so writing through one cannot create a file outside either.
 *
 * Path resolution and the checks around opening use synchronous metadata calls (realpath,
 * lstat, open, fstat, readlink): each takes microseconds in the kernel but tens of
 * microseconds through the thread pool, which made them most of a file operation's cost. File
 * contents, listings and writes stay asynchronous.
 *
 * Concurrent changes: a directory swapped for a symlink between that check and the operation is
 * caught after opening. Every read, listing and stat opens its target (the final component with
 * O_NOFOLLOW) and asks the kernel where the open descriptor really is (/proc/self/fd on Linux),
 * then reads through the descriptor; a write's temporary file is checked the same way before it
 * is renamed over the target. Where /proc is absent only the check before opening applies.
 */
export class DiskWorkspaceFs implements WorkspaceFs {
  readonly label: string;
  /** Real absolute path of the workspace root (for process-running tools; never shown to models). */
  readonly hostRoot: string;
  #protected: ProtectedPaths;
  readonly #lockOptions: FileLockOptions;

  private constructor(
    realRoot: string,
    label: string,
    protectedPaths: ProtectedPaths,
    lockOptions: FileLockOptions,
  ) {
    this.hostRoot = realRoot;
    this.label = label;
    this.#protected = protectedPaths;
    this.#lockOptions = lockOptions;
  }

  get protectedPaths(): ProtectedPaths {
    return this.#protected;
  }

  /**
   * Add files the loaded configs name (hook scripts and modules) to what no write may change.
   * Called once the configs are read, before any tool runs.
   */
  protectFiles(files: readonly string[]): void {
    this.#protected = this.#protected.withFiles(files);
  }

  /**
   * Open a workspace on an existing directory; `root` must be absolute. `writeLockTimeoutMs`: how
   * long a write waits for another process's lock on the same file (default 10 s).
   */
  static async create(
    root: string,
    options: { label?: string; protectedPaths?: ProtectedPaths; writeLockTimeoutMs?: number } = {},
  ): Promise<DiskWorkspaceFs> {
    if (!path.isAbsolute(root)) throw new TypeError("the workspace root must be an absolute path");
    let realRoot: string;
    let stats: Stats;
    try {
      realRoot = await fsp.realpath(root);
      stats = await fsp.stat(realRoot);
    } catch (error) {
      throw mapNodeError(error, ".", "open the workspace root");
    }
    if (!stats.isDirectory()) {
      throw new WorkspaceError("NOT_A_DIRECTORY", ".", "the workspace root is not a directory");
    }
    return new DiskWorkspaceFs(
      realRoot,
      options.label ?? (path.basename(realRoot) || "workspace"),
      options.protectedPaths ?? DEFAULT_PROTECTED_PATHS,
      options.writeLockTimeoutMs === undefined ? {} : { timeoutMs: options.writeLockTimeoutMs },
    );
  }

  /** Where per-file write locks live: inside the reserved directory, never visible to a model. */
  get #locksDir(): string {
    return path.join(this.hostRoot, RESERVED_DIR, "locks");
  }

  async resolve(p: string): Promise<string> {
    return (await this.#locate(p)).canonical;
  }

  async stat(p: string): Promise<FileStat | undefined> {
    const { abs } = await this.#locate(p);
    try {
      const { fd, stats } = this.#openConfirmed(abs, p, READ_FLAGS);
      closeSync(fd);
      return toFileStat(stats);
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return undefined;
      // Metadata of an entry that cannot be opened for reading (no permission, a socket): the
      // path was checked just before, and nothing but its kind, size and mode is revealed.
      if (code === "EACCES" || code === "EPERM" || code === "ENXIO") return this.#lstatChecked(abs, p);
      throw mapNodeError(error, p, "stat");
    }
  }

  async #lstatChecked(abs: string, p: string): Promise<FileStat | undefined> {
    try {
      const stats = await fsp.lstat(abs);
      if (stats.isSymbolicLink()) throw escapeError(p);
      return toFileStat(stats);
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return undefined;
      throw mapNodeError(error, p, "stat");
    }
  }

  async readFile(p: string): Promise<Uint8Array> {
    const { abs } = await this.#locate(p);
    let opened: Opened;
    try {
      opened = this.#openConfirmed(abs, p, READ_FLAGS);
    } catch (error) {
      throw mapNodeError(error, p, "read");
    }
    const { fd, stats } = opened;
    try {
      if (stats.isDirectory()) throw new WorkspaceError("IS_DIRECTORY", p, `${quote(p)} is a directory`);
      if (!stats.isFile()) throw new WorkspaceError("INVALID_PATH", p, `${quote(p)} is not a regular file`);
      return await readWhole(fd, stats.size);
    } catch (error) {
      throw mapNodeError(error, p, "read");
    } finally {
      closeSync(fd);
    }
  }

  async writeFileAtomic(p: string, data: Uint8Array, options: WriteOptions = {}): Promise<void> {
    const { abs, canonical } = await this.#locate(p);
    if (canonical === ".") throw new WorkspaceError("IS_DIRECTORY", p, `${quote(p)} is the workspace root`);
    this.#protected.assertWritable(p, relativeParts(p), canonical.split("/"));
    const dir = path.dirname(abs);
    try {
      await fsp.mkdir(dir, { recursive: true });
    } catch (error) {
      const code = errnoCode(error);
      if (code === "EEXIST" || code === "ENOTDIR") {
        throw new WorkspaceError("NOT_A_DIRECTORY", p, `a parent of ${quote(p)} is a file, not a directory`);
      }
      throw mapNodeError(error, p, "create the parent directory of");
    }
    const previous = lstatOrUndefined(abs);
    if (previous?.isDirectory()) throw new WorkspaceError("IS_DIRECTORY", p, `${quote(p)} is a directory`);
    if (previous !== undefined && !previous.isFile()) {
      throw new WorkspaceError("INVALID_PATH", p, `${quote(p)} is not a regular file`);
    }

    const temp = path.join(dir, `.${path.basename(abs)}.${randomBytes(6).toString("hex")}.tmp`);
    let committed = false;
    try {
      // A new file gets 0o666 minus the umask, like any other created file; a replaced file keeps
      // its permission bits.
      const handle = await fsp.open(temp, "wx", previous === undefined ? 0o666 : 0o600);
      try {
        // If a parent was swapped for a symlink, the temporary file was created elsewhere:
        // remove it there and refuse. The rename below re-resolves the same parents, so a later
        // swap makes it fail (the temporary file is not at the new location) rather than escape.
        const real = openedPath(handle.fd);
        if (real !== undefined && !isInside(this.hostRoot, real)) {
          await fsp.rm(real, { force: true });
          throw escapeError(p);
        }
        await handle.writeFile(data);
        if (previous !== undefined) await handle.chmod(previous.mode & 0o7777);
        await handle.sync();
      } finally {
        await handle.close();
      }
      // Check and rename under the file's lock: another harness process writing the same file
      // cannot slip its rename between our check and ours, so exactly one of two writers
      // holding the same expected version succeeds and no reported write is overwritten unseen.
      await withFileLock(
        this.#locksDir,
        canonical,
        async () => {
          await this.#checkExpectedVersion(abs, p, options.expectedVersion);
          await fsp.rename(temp, abs);
          committed = true;
        },
        this.#lockOptions,
      );
    } catch (error) {
      // The lock is taken before the version check and the rename, so timing out waiting for it
      // means nothing was applied: a clear, retryable refusal, not an I/O error of unknown effect.
      if (error instanceof FileLockTimeout) {
        throw new WorkspaceError(
          "FILE_BUSY",
          p,
          `${quote(p)} is being written by another process (${error.message}); nothing was written`,
        );
      }
      if (error instanceof FileLockDirectoryError) {
        throw new WorkspaceError("IO_ERROR", p, `could not lock ${quote(p)} for writing: ${error.message}`);
      }
      throw mapNodeError(error, p, "write");
    } finally {
      if (!committed) await fsp.rm(temp, { force: true }).catch(() => undefined);
    }
    await syncDirectory(dir);
  }

  async readDir(p: string): Promise<DirEntry[]> {
    const { abs, canonical } = await this.#locate(p);
    let entries: import("node:fs").Dirent[];
    let fd: number | undefined;
    try {
      const opened = this.#openConfirmed(abs, p, DIRECTORY_FLAGS);
      fd = opened.fd;
      // Listed through the descriptor, so the directory listed is the one checked.
      const listed = opened.confirmed ? descriptorPath(fd) : abs;
      entries = await fsp.readdir(listed, { withFileTypes: true });
    } catch (error) {
      throw mapNodeError(error, p, "list");
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    return entries
      .filter((entry) => !(canonical === "." && isReservedParts([entry.name])))
      .map((entry): DirEntry => ({ name: entry.name, kind: direntKind(entry) }))
      .sort((a, b) => compareCodeUnits(a.name, b.name));
  }

  async glob(pattern: string, options: GlobOptions = {}): Promise<string[]> {
    const normalized = checkGlobPattern(pattern);
    const cwdInput = options.cwd ?? ".";
    const cwd = await this.#locate(cwdInput);
    const cwdStat = await this.stat(cwdInput);
    if (cwdStat === undefined)
      throw new WorkspaceError("NOT_FOUND", cwdInput, `${quote(cwdInput)} does not exist`);
    if (cwdStat.kind !== "directory") {
      throw new WorkspaceError("NOT_A_DIRECTORY", cwdInput, `${quote(cwdInput)} is not a directory`);
    }
    // The literal prefix before the first wildcard is where the crawl starts: check it like any
    // path, so `escape/*.txt` cannot list a directory an inside symlink points to.
    const base = picomatch.scan(normalized).base;
    if (base !== "") await this.#locate(prefixed(cwd.canonical, base));

    // Loaded on first use: its directory walker eagerly requires a second copy of picomatch,
    // a cost every run would pay at start even when no tool ever globs.
    const { glob: tinyglob } = await import("tinyglobby");
    const matches = await tinyglob(normalized, {
      cwd: cwd.abs,
      onlyFiles: true,
      followSymbolicLinks: false,
      expandDirectories: false,
      dot: true,
      ignore: cwd.canonical === "." ? [RESERVED_DIR, `${RESERVED_DIR}/**`] : [],
    });
    const candidates = matches
      .map((match) => prefixed(cwd.canonical, match))
      .filter((relative) => {
        const parts = relative.split("/");
        return parts.every(isValidComponent) && !isReservedParts(parts);
      });
    return candidates.filter((relative) => this.#isInside(relative)).sort(compareCodeUnits);
  }

  /**
   * Open `abs` (checked by #locate) and confirm from the descriptor that what was opened is
   * inside the workspace and outside its reserved directory; a concurrent symlink swap fails.
   * The open, fstat and check are synchronous: metadata calls that take microseconds in the
   * kernel but tens of microseconds each through the thread pool.
   */
  #openConfirmed(abs: string, p: string, flags: number): Opened {
    const fd = openSync(abs, flags);
    try {
      const stats = fstatSync(fd);
      const real = openedPath(fd);
      if (real !== undefined) {
        if (!isInside(this.hostRoot, real)) throw escapeError(p);
        const relative = path.relative(this.hostRoot, real);
        if (relative !== "" && isReservedParts(relative.split(path.sep))) {
          throw new WorkspaceError(
            "RESERVED_PATH",
            p,
            `${quote(p)} leads into the reserved ${RESERVED_DIR} directory`,
          );
        }
      }
      return { fd, stats, confirmed: real !== undefined };
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  #isInside(relative: string): boolean {
    try {
      return isInside(this.hostRoot, realpathSync.native(path.join(this.hostRoot, ...relative.split("/"))));
    } catch {
      return false;
    }
  }

  async #checkExpectedVersion(abs: string, p: string, expected: string | null | undefined): Promise<void> {
    if (expected === undefined) return;
    let current: Uint8Array | undefined;
    try {
      const { fd, stats } = this.#openConfirmed(abs, p, READ_FLAGS);
      try {
        current = await readWhole(fd, stats.size);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      if (errnoCode(error) !== "ENOENT") throw error;
    }
    if (expected === null && current !== undefined) {
      throw new WorkspaceError("STALE_VERSION", p, `${quote(p)} was created by someone else in the meantime`);
    }
    if (expected !== null && (current === undefined || versionOf(current) !== expected)) {
      throw new WorkspaceError("STALE_VERSION", p, `${quote(p)} changed since it was read`);
    }
  }

  async #locate(input: string): Promise<Located> {
    const parts = relativeParts(input);
    const abs = await this.#realTarget(this.hostRoot, parts, input, 0);
    const relative = path.relative(this.hostRoot, abs);
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
  async #realTarget(base: string, parts: readonly string[], input: string, hops: number): Promise<string> {
    for (let i = parts.length; i >= 0; i--) {
      const candidate = joinVerbatim(base, parts.slice(0, i));
      let real: string;
      try {
        real = realpathSync.native(candidate);
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" && i > 0 && lstatOrUndefined(candidate)?.isSymbolicLink()) {
          return this.#followDangling(base, parts, i, input, hops);
        }
        if (code === "ENOENT" || code === "ENOTDIR") continue;
        throw mapNodeError(error, input, "resolve");
      }
      if (!isInside(this.hostRoot, real)) throw escapeError(input);
      const rest = parts.slice(i);
      // A missing directory followed by `..` fails in the kernel too.
      if (rest.includes("..")) throw new WorkspaceError("NOT_FOUND", input, `${quote(input)} does not exist`);
      return path.join(real, ...rest);
    }
    throw new WorkspaceError("NOT_FOUND", input, "the workspace root no longer exists");
  }

  /** `base/parts[0..i)` is a symlink whose target does not exist: resolve where it would write. */
  async #followDangling(
    base: string,
    parts: readonly string[],
    i: number,
    input: string,
    hops: number,
  ): Promise<string> {
    if (hops >= MAX_SYMLINK_HOPS) {
      throw new WorkspaceError(
        "INVALID_PATH",
        input,
        `${quote(input)} has too many levels of symbolic links`,
      );
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
    if (!isInside(this.hostRoot, parent)) throw escapeError(input);
    const rest = parts.slice(i);
    if (path.isAbsolute(target)) {
      const { root } = path.parse(target);
      return this.#realTarget(root, [...splitTarget(target.slice(root.length)), ...rest], input, hops + 1);
    }
    return this.#realTarget(parent, [...splitTarget(target), ...rest], input, hops + 1);
  }
}

function prefixed(dir: string, relative: string): string {
  return dir === "." ? relative : `${dir}/${relative}`;
}

function splitTarget(target: string): string[] {
  return target.split(/[\\/]/).filter((part) => part !== "" && part !== ".");
}

/** Join without collapsing `..` (path.join would resolve it lexically, not like the kernel). */
function joinVerbatim(base: string, parts: readonly string[]): string {
  if (parts.length === 0) return base;
  return base.endsWith(path.sep) ? base + parts.join(path.sep) : base + path.sep + parts.join(path.sep);
}

function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return candidate.startsWith(prefix);
}

function lstatOrUndefined(p: string): Stats | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

interface Opened {
  fd: number;
  stats: Stats;
  /** Whether the kernel confirmed the descriptor's location (false where /proc is absent). */
  confirmed: boolean;
}

/** One positional read into `buffer`, as a promise (the callback API skips FileHandle's layers). */
function readAt(fd: number, buffer: Buffer, offset: number, position: number): Promise<number> {
  return new Promise((resolve, reject) => {
    read(fd, buffer, offset, buffer.length - offset, position, (error, bytesRead) => {
      if (error) reject(error);
      else resolve(bytesRead);
    });
  });
}

/**
 * The whole file from an open descriptor: usually one read, since the buffer has room for one
 * byte more than the file's size and a short read of a regular file means its end. More reads
 * only if it grew. The data itself is read off the main thread.
 */
async function readWhole(fd: number, sizeHint: number): Promise<Uint8Array> {
  // Unpooled: the result is a view of this memory, and must not share it with other buffers.
  let buffer = Buffer.allocUnsafeSlow(sizeHint + 1);
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      const bigger = Buffer.allocUnsafeSlow(buffer.length * 2);
      buffer.copy(bigger, 0, 0, length);
      buffer = bigger;
    }
    const wanted = buffer.length - length;
    const bytesRead = await readAt(fd, buffer, length, length);
    length += bytesRead;
    if (bytesRead < wanted) return new Uint8Array(buffer.buffer, buffer.byteOffset, length);
  }
}

/** Make a rename durable. Directories cannot be opened for fsync everywhere (Windows): best effort. */
async function syncDirectory(dir: string): Promise<void> {
  let handle: fsp.FileHandle | undefined;
  try {
    handle = await fsp.open(dir, constants.O_RDONLY);
    await handle.sync();
  } catch {
    // The data itself was fsynced before the rename; only the rename's durability is best effort.
  } finally {
    await handle?.close();
  }
}

function toFileStat(stats: Stats): FileStat {
  const kind = stats.isFile() ? "file" : stats.isDirectory() ? "directory" : "other";
  return { kind, size: kind === "file" ? stats.size : 0, mode: stats.mode & 0o7777 };
}

function direntKind(entry: import("node:fs").Dirent): DirEntry["kind"] {
  if (entry.isFile()) return "file";
  if (entry.isDirectory()) return "directory";
  if (entry.isSymbolicLink()) return "symlink";
  return "other";
}

function escapeError(input: string): WorkspaceError {
  return new WorkspaceError(
    "PATH_ESCAPE",
    input,
    `path escapes the workspace: ${quote(input)} resolves (through a symbolic link) to a location outside it`,
  );
}

function errnoCode(error: unknown): string | undefined {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") {
    return error.code;
  }
  return undefined;
}

const ERRNO_CODES: Record<string, WorkspaceErrorCode> = {
  ENOENT: "NOT_FOUND",
  EISDIR: "IS_DIRECTORY",
  ENOTDIR: "NOT_A_DIRECTORY",
  ENAMETOOLONG: "INVALID_PATH",
  EINVAL: "INVALID_PATH",
  ELOOP: "INVALID_PATH",
};

const ERRNO_MESSAGES: Partial<Record<WorkspaceErrorCode, string>> = {
  NOT_FOUND: "does not exist",
  IS_DIRECTORY: "is a directory",
  NOT_A_DIRECTORY: "has a parent that is not a directory",
  INVALID_PATH: "is not a usable path on this file system",
};

/**
 * Node errors carry absolute host paths in `message`; only the errno code survives, next to the
 * relative path the caller gave. WorkspaceErrors pass through unchanged.
 */
function mapNodeError(error: unknown, p: string, action: string): WorkspaceError {
  if (error instanceof WorkspaceError) return error;
  const errno = errnoCode(error);
  const code = (errno !== undefined && ERRNO_CODES[errno]) || "IO_ERROR";
  const detail = ERRNO_MESSAGES[code];
  const message =
    detail !== undefined
      ? `${quote(p)} ${detail}`
      : `could not ${action} ${quote(p)} (${errno ?? "unknown error"})`;
  return new WorkspaceError(code, p, message);
}
