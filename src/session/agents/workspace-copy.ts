import { closeSync, constants, type Stats } from "node:fs";
import { chmod, copyFile, mkdir, realpath, rm, symlink } from "node:fs/promises";
import path from "node:path";
import { errnoCode } from "../../shared/errno.js";
import { BeneathError, HeldDir } from "../../workspace/beneath.js";
import { RESERVED_DIR } from "../../workspace/fs.js";
import type { Manifest } from "../../workspace/manifest.js";
import { descriptorPath, openedPath } from "../../workspace/opened-path.js";
import { TreeSnapshot } from "../../workspace/tree-snapshot.js";

/**
 * A private copy of a workspace for a child session that may write: the child changes the copy,
 * never the parent's files, and what it changed comes back file by file (child-changes.ts,
 * merge.ts), each bound to the version it had in the copy's base.
 *
 * The copy is made by a walk beneath the source (workspace/beneath.ts): every directory is held
 * open and every file opened without following a link, so a directory swapped for a link while
 * the copy runs is copied as that link, never followed out of the tree. Files are copied with
 * `copyFile(…, COPYFILE_FICLONE)`: a clone (shared extents, copy-on-write) where the file system
 * can, a byte copy where it cannot; never a hard link, so an in-place append in the child
 * (`echo x >> f`) cannot reach the parent's inode. Links are copied as links (their target text),
 * directories and exec bits kept; FIFOs, sockets and devices are left out (nothing to copy, and
 * opening a FIFO could block).
 *
 * Measured on a 10,000-file tree on ext4 (no reflink; 2 busy cores; `bench/agents.ts`, medians of
 * 5), this walk with its base manifest took 3.9 s (the manifest 0.5 s of it) where
 * `fs.promises.cp` with the `.harness` filter and verbatim links took 6.1 s (5.7 s plain). `cp` is
 * written in JavaScript and for every entry makes several thread-pool round trips (stat the
 * source, stat the destination, the filter, then the copy and a chmod), where this walk lists and
 * lstats synchronously (microseconds each in the kernel) and sends only the copies to the thread
 * pool, several at once. `cp` also refuses a FIFO or socket instead of skipping it,
 * and reads through a directory swapped for a link while it runs.
 *
 * The base is read from the copy after it is made (a TreeSnapshot of the copy), never from the
 * source: a parent change while the copy runs cannot make the base lie about what the child
 * started from. Its stat cache is kept in the copy's own `.harness` (see copyStateDir), so
 * `childChanges` rehashes only what the child touched.
 */

export interface WorkspaceCopy {
  /** Absolute (real) path of the copy. */
  root: string;
  /** Manifest of the copy as made: the child's base versions. */
  base: Manifest;
  /** Whether the file system cloned files (`reflink`) or their bytes were copied (`copy`). */
  mechanism: "reflink" | "copy";
  /** Regular files copied, and their bytes. */
  files: number;
  bytes: number;
  /** Entries not copied: special files, and what could not be read (no permission, gone meanwhile). */
  skipped: string[];
}

export interface CopyOptions {
  signal?: AbortSignal;
}

/** File copies in flight at once: enough to keep the thread pool busy, few enough to bound descriptors. */
const COPIES_IN_FLIGHT = 16;

export class WorkspaceCopyError extends Error {
  override readonly name = "WorkspaceCopyError";
}

/**
 * Copy the tree of `source` (untracked files and `.git` included, the top-level `.harness` left
 * out) into `destination`, which must not exist and is created 0700. On any failure (or abort)
 * the partial copy is removed.
 */
export async function copyWorkspace(
  source: string,
  destination: string,
  options: CopyOptions = {},
): Promise<WorkspaceCopy> {
  if (!path.isAbsolute(source) || !path.isAbsolute(destination))
    throw new WorkspaceCopyError("the source and destination of a workspace copy must be absolute paths");
  const realSource = await realpath(source).catch(() => {
    throw new WorkspaceCopyError(`the workspace ${source} cannot be read`);
  });
  // Checked before anything is made (a copy inside the source would be made in the parent's
  // workspace), and again on the real path once it exists.
  const parent = await realpath(path.dirname(destination)).catch(() =>
    path.resolve(path.dirname(destination)),
  );
  const planned = path.join(parent, path.basename(destination));
  if (isWithin(realSource, planned) || isWithin(planned, realSource))
    throw new WorkspaceCopyError("a workspace cannot be copied into itself");
  await mkdir(path.dirname(destination), { recursive: true });
  try {
    await mkdir(destination, { mode: 0o700 });
  } catch (error) {
    if (errnoCode(error) === "EEXIST") throw new WorkspaceCopyError(`${destination} already exists`);
    throw error;
  }
  // Not the source's mode: the copy holds the parent's files and is for this user alone.
  await chmod(destination, 0o700);
  const root = await realpath(destination);
  if (isWithin(realSource, root) || isWithin(root, realSource))
    throw await removed(root, new WorkspaceCopyError("a workspace cannot be copied into itself"));
  const copier = new Copier(root, options.signal);
  try {
    const held = HeldDir.openRoot(realSource);
    try {
      await copier.directory(held, "");
    } finally {
      held.close();
    }
    await copier.drain();
    options.signal?.throwIfAborted();
    // Hashed, not kept: keeping every file's content would write the whole tree a second time
    // (measured: the base took about six times as long). childChanges keeps what it reads.
    const tree = new TreeSnapshot({ root, stateDir: copyStateDir(root), watch: false, withheld: () => true });
    const base = await tree.snapshot({ full: true });
    tree.save();
    tree.close();
    options.signal?.throwIfAborted();
    return {
      root,
      base,
      mechanism: copier.mechanism ?? "copy",
      files: copier.files,
      bytes: copier.bytes,
      skipped: copier.skipped,
    };
  } catch (error) {
    await copier.drain().catch(() => undefined);
    throw await removed(root, error);
  }
}

/**
 * Where the copy's base snapshot keeps its stat cache (and childChanges its contents): inside the
 * copy's `.harness`, which no manifest includes, and apart from the state a session opened on the
 * copy keeps there, so that session hashes (and keeps) every file itself rather than trusting a
 * cache that kept none.
 */
export function copyStateDir(root: string): string {
  return path.join(root, RESERVED_DIR, "agent-copy");
}

function isWithin(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

async function removed(root: string, error: unknown): Promise<unknown> {
  await rm(root, { recursive: true, force: true }).catch(() => undefined);
  return error;
}

/** One copy in progress: the walk, the copies in flight, the totals. */
class Copier {
  mechanism: "reflink" | "copy" | undefined;
  files = 0;
  bytes = 0;
  skipped: string[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private failure: unknown;
  /** Directories whose mode is set once their entries are in (a read-only one could not be filled). */
  private readonly modes: { target: string; mode: number }[] = [];

  constructor(
    private readonly root: string,
    private readonly signal: AbortSignal | undefined,
  ) {}

  /** Copy the held directory's entries (`rel` is its path, "" for the root) below `root/rel`. */
  async directory(dir: HeldDir, rel: string): Promise<void> {
    let names: string[];
    try {
      names = dir.list();
    } catch (error) {
      if (rel !== "" && isUnreadable(error)) {
        this.skipped.push(rel);
        return;
      }
      throw error;
    }
    names.sort();
    for (const name of names) {
      if (this.failure !== undefined) throw this.failure;
      this.signal?.throwIfAborted();
      // Harness's own state is not part of the workspace; a `.harness` below the root is.
      if (rel === "" && name === RESERVED_DIR) continue;
      const child = rel === "" ? name : `${rel}/${name}`;
      const target = path.join(this.root, child);
      const info = dir.lstat(name);
      if (info === undefined) continue;
      if (info.isSymbolicLink()) {
        await symlink(dir.readlink(name), target);
      } else if (info.isDirectory()) {
        let below: HeldDir;
        try {
          below = dir.dir(name);
        } catch (error) {
          // Swapped for a link (or removed) since the lstat: copied as it is now, or not at all.
          if (error instanceof BeneathError || isUnreadable(error)) {
            this.skipped.push(child);
            continue;
          }
          throw error;
        }
        try {
          await mkdir(target, { mode: 0o700 });
          this.modes.push({ target, mode: below.stats.mode & 0o7777 });
          await this.directory(below, child);
        } finally {
          below.close();
        }
      } else if (info.isFile()) {
        await this.file(dir, name, child, target);
      } else {
        this.skipped.push(child);
      }
    }
    if (rel === "") {
      await this.drain();
      // Deepest first, so a read-only parent is set after its read-only children.
      for (const { target, mode } of this.modes.reverse()) await chmod(target, mode);
    }
  }

  /** Start copying one file (opened beneath its held directory, never through a link). */
  private async file(dir: HeldDir, name: string, rel: string, target: string): Promise<void> {
    let opened: { fd: number; stats: Stats };
    try {
      opened = dir.open(name);
    } catch (error) {
      if (error instanceof BeneathError || isUnreadable(error)) {
        this.skipped.push(rel);
        return;
      }
      throw error;
    }
    if (!opened.stats.isFile()) {
      closeSync(opened.fd);
      this.skipped.push(rel);
      return;
    }
    // The opened descriptor's /proc path reaches exactly the file opened (not whatever the name
    // leads to by the time the copy runs); without /proc, the held directory's path.
    const from = openedPath(opened.fd) === undefined ? dir.at(name) : descriptorPath(opened.fd);
    if (this.mechanism === undefined) {
      // The first file tells whether the file system clones: copied alone, before any other.
      try {
        await this.copy(from, target, opened.stats.size);
      } finally {
        closeSync(opened.fd);
      }
      return;
    }
    while (this.inFlight.size >= COPIES_IN_FLIGHT) await Promise.race(this.inFlight);
    const copy = this.copy(from, target, opened.stats.size)
      .catch((error: unknown) => {
        this.failure ??= error;
      })
      .finally(() => {
        closeSync(opened.fd);
        this.inFlight.delete(copy);
      });
    this.inFlight.add(copy);
  }

  private async copy(from: string, target: string, size: number): Promise<void> {
    if (this.mechanism === undefined) {
      // Forced, the clone either happens or fails (ENOTSUP, EXDEV): then bytes are copied.
      try {
        await copyFile(from, target, constants.COPYFILE_FICLONE_FORCE | constants.COPYFILE_EXCL);
        this.mechanism = "reflink";
      } catch {
        this.mechanism = "copy";
        await rm(target, { force: true });
        await copyFile(from, target, constants.COPYFILE_FICLONE | constants.COPYFILE_EXCL);
      }
    } else {
      // Copies the mode too (exec bits kept); EXCL: nothing there may be written through.
      await copyFile(from, target, constants.COPYFILE_FICLONE | constants.COPYFILE_EXCL);
    }
    this.files += 1;
    this.bytes += size;
  }

  /** Wait for every copy in flight; the first failure is thrown. */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.race(this.inFlight);
    if (this.failure !== undefined) throw this.failure;
  }
}

function isUnreadable(error: unknown): boolean {
  const code = errnoCode(error);
  return code === "EACCES" || code === "EPERM" || code === "ENOENT";
}
