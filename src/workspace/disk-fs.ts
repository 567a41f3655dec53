import { randomBytes } from "node:crypto";
import { closeSync, type Dirent, promises as fsp, realpathSync, type Stats } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import { errnoCode } from "../shared/errno.js";
import { checkGlobPattern, isReservedParts, isValidComponent, quote, relativeParts } from "./boundary.js";
import { escapeError, mapNodeError } from "./disk-errors.js";
import {
  DIRECTORY_FLAGS,
  direntKind,
  type Opened,
  openConfirmed,
  READ_FLAGS,
  readInChunks,
  readWhole,
  syncDirectory,
  toFileStat,
} from "./disk-io.js";
import { type HeldDirectory, holdParentDirectory } from "./disk-parent.js";
import { isInside, type Located, locate, lstatOrUndefined } from "./disk-paths.js";
import { FileLockDirectoryError, type FileLockOptions, FileLockTimeout, withFileLock } from "./file-lock.js";
import {
  type ChunkOptions,
  chunkSize,
  type DirEntry,
  type FileStat,
  type GlobOptions,
  RESERVED_DIR,
  WorkspaceError,
  type WorkspaceFs,
  type WriteOptions,
} from "./fs.js";
import { descriptorPath, openedPath } from "./opened-path.js";
import { compareCodeUnits } from "./order.js";
import { DEFAULT_PROTECTED_PATHS, type ProtectedPaths } from "./protected.js";
import { versionOf } from "./version.js";

/**
 * The workspace on a real directory. Every operation applies the lexical boundary
 * (boundary.ts) and then the disk stage: the deepest existing ancestor of the target is resolved
 * with realpath and must stay inside the (real) root, so a symlink or junction inside the
 * workspace cannot lead a file tool outside it. Dangling symlinks are followed by reading their
 * target, so writing through one cannot create a file outside either (disk-paths.ts).
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
 * is renamed over the target (disk-io.ts). Where /proc is absent only the check before opening
 * applies.
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
    return this.#locate(p).canonical;
  }

  async stat(p: string): Promise<FileStat | undefined> {
    const { abs } = this.#locate(p);
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

  /** A regular file opened through a descriptor the kernel confirms is inside; the caller closes it. */
  #openRegular(p: string): Opened {
    const { abs } = this.#locate(p);
    let opened: Opened;
    try {
      opened = this.#openConfirmed(abs, p, READ_FLAGS);
    } catch (error) {
      throw mapNodeError(error, p, "read");
    }
    const { fd, stats } = opened;
    if (stats.isFile()) return opened;
    closeSync(fd);
    if (stats.isDirectory()) throw new WorkspaceError("IS_DIRECTORY", p, `${quote(p)} is a directory`);
    throw new WorkspaceError("INVALID_PATH", p, `${quote(p)} is not a regular file`);
  }

  async readFile(p: string): Promise<Uint8Array> {
    const { fd, stats } = this.#openRegular(p);
    try {
      return await readWhole(fd, stats.size);
    } catch (error) {
      throw mapNodeError(error, p, "read");
    } finally {
      closeSync(fd);
    }
  }

  async *readChunks(p: string, options?: ChunkOptions): AsyncGenerator<Uint8Array> {
    const chunkBytes = chunkSize(options);
    const { fd, stats } = this.#openRegular(p);
    try {
      // Every chunk comes through the descriptor opened and confirmed above, so a path swapped
      // for a symlink between two chunks changes nothing.
      yield* readInChunks(fd, stats.size, chunkBytes);
    } catch (error) {
      throw mapNodeError(error, p, "read");
    } finally {
      closeSync(fd);
    }
  }

  async writeFileAtomic(p: string, data: Uint8Array, options: WriteOptions = {}): Promise<void> {
    const { abs, canonical } = this.#locate(p);
    if (canonical === ".") throw new WorkspaceError("IS_DIRECTORY", p, `${quote(p)} is the workspace root`);
    this.#protected.assertWritable(p, relativeParts(p), canonical.split("/"));
    const parentParts = canonical.split("/").slice(0, -1);
    const held = await this.#holdParent(abs, parentParts, p);
    try {
      await this.#writeInto(held, path.basename(abs), canonical, p, data, options);
    } finally {
      held?.close();
    }
  }

  /**
   * The directory a write lands in: held open (disk-parent.ts) where /proc exists, so every later
   * step names its file through the descriptor; created with mkdir -p otherwise.
   */
  async #holdParent(
    abs: string,
    parentParts: readonly string[],
    p: string,
  ): Promise<HeldDirectory | undefined> {
    try {
      const held = holdParentDirectory(this.hostRoot, parentParts, p);
      if (held !== undefined) return held;
      await fsp.mkdir(path.dirname(abs), { recursive: true });
      return undefined;
    } catch (error) {
      const code = errnoCode(error);
      if (code === "EEXIST" || code === "ENOTDIR") {
        throw new WorkspaceError("NOT_A_DIRECTORY", p, `a parent of ${quote(p)} is a file, not a directory`);
      }
      throw mapNodeError(error, p, "create the parent directory of");
    }
  }

  async #writeInto(
    held: HeldDirectory | undefined,
    name: string,
    canonical: string,
    p: string,
    data: Uint8Array,
    options: WriteOptions,
  ): Promise<void> {
    const dir = held?.path ?? path.dirname(path.join(this.hostRoot, ...canonical.split("/")));
    const abs = held?.at(name) ?? path.join(dir, name);
    const previous = lstatOrUndefined(abs);
    if (previous?.isDirectory()) throw new WorkspaceError("IS_DIRECTORY", p, `${quote(p)} is a directory`);
    if (previous !== undefined && !previous.isFile()) {
      throw new WorkspaceError("INVALID_PATH", p, `${quote(p)} is not a regular file`);
    }

    const temp =
      held?.at(`.${name}.${randomBytes(6).toString("hex")}.tmp`) ??
      path.join(dir, `.${name}.${randomBytes(6).toString("hex")}.tmp`);
    let committed = false;
    try {
      // A new file gets 0o666 minus the umask, like any other created file; a replaced file keeps
      // its permission bits.
      const handle = await fsp.open(temp, "wx", previous === undefined ? 0o666 : 0o600);
      try {
        // Without a held directory (no /proc) a parent swapped for a symlink makes the temporary
        // file land elsewhere: remove it there and refuse. With one, this cannot happen.
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
    const { abs, canonical } = this.#locate(p);
    let entries: Dirent[];
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
    const cwd = this.#locate(cwdInput);
    const cwdStat = await this.stat(cwdInput);
    if (cwdStat === undefined)
      throw new WorkspaceError("NOT_FOUND", cwdInput, `${quote(cwdInput)} does not exist`);
    if (cwdStat.kind !== "directory") {
      throw new WorkspaceError("NOT_A_DIRECTORY", cwdInput, `${quote(cwdInput)} is not a directory`);
    }
    // The literal prefix before the first wildcard is where the crawl starts: check it like any
    // path, so `escape/*.txt` cannot list a directory an inside symlink points to.
    const base = picomatch.scan(normalized).base;
    if (base !== "") this.#locate(prefixed(cwd.canonical, base));

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

  #isInside(relative: string): boolean {
    try {
      return isInside(this.hostRoot, realpathSync.native(path.join(this.hostRoot, ...relative.split("/"))));
    } catch {
      return false;
    }
  }

  #locate(input: string): Located {
    return locate(this.hostRoot, input);
  }

  #openConfirmed(abs: string, p: string, flags: number): Opened {
    return openConfirmed(this.hostRoot, abs, p, flags);
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
}

function prefixed(dir: string, relative: string): string {
  return dir === "." ? relative : `${dir}/${relative}`;
}
