import {
  closeSync,
  constants,
  type Dirent,
  promises as fsp,
  fstatSync,
  openSync,
  read,
  readSync,
  type Stats,
} from "node:fs";
import path from "node:path";
import { isReservedParts, quote } from "./boundary.js";
import { escapeError } from "./disk-errors.js";
import { isInside } from "./disk-paths.js";
import { type DirEntry, type FileStat, RESERVED_DIR, WorkspaceError } from "./fs.js";
import { openedPath } from "./opened-path.js";

/**
 * Opening, reading and syncing on disk for DiskWorkspaceFs: every read, listing and stat opens
 * its target (the final component with O_NOFOLLOW) and asks the kernel where the open descriptor
 * really is (/proc/self/fd on Linux), then reads through the descriptor, so a directory swapped
 * for a symlink after the path was checked is caught. Where /proc is absent only the check
 * before opening applies.
 */

// O_NOFOLLOW and O_NONBLOCK are POSIX-only; on Windows they are absent and 0 is harmless.
export const READ_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
export const DIRECTORY_FLAGS = READ_FLAGS | (constants.O_DIRECTORY ?? 0);

export interface Opened {
  fd: number;
  stats: Stats;
  /** Whether the kernel confirmed the descriptor's location (false where /proc is absent). */
  confirmed: boolean;
}

/**
 * Open `abs` (already located inside `root`) and confirm from the descriptor that what was
 * opened is inside the workspace and outside its reserved directory; a concurrent symlink swap
 * fails. The open, fstat and check are synchronous: metadata calls that take microseconds in the
 * kernel but tens of microseconds each through the thread pool.
 */
export function openConfirmed(root: string, abs: string, p: string, flags: number): Opened {
  const fd = openSync(abs, flags);
  try {
    const stats = fstatSync(fd);
    const real = openedPath(fd);
    if (real !== undefined) {
      if (!isInside(root, real)) throw escapeError(p);
      const relative = path.relative(root, real);
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
 * Files up to this size are read on the main thread: from the page cache that takes microseconds,
 * less than a round trip through the thread pool. Larger ones are read off it.
 */
const SYNC_READ_BYTES = 64 * 1024;

function readPart(fd: number, buffer: Buffer, offset: number, position: number, sync: boolean) {
  return sync
    ? readSync(fd, buffer, offset, buffer.length - offset, position)
    : readAt(fd, buffer, offset, position);
}

/**
 * The whole file from an open descriptor: usually one read, since the buffer has room for one
 * byte more than the file's size and a short read of a regular file means its end. More reads
 * only if it grew.
 */
export async function readWhole(fd: number, sizeHint: number): Promise<Uint8Array> {
  const sync = sizeHint < SYNC_READ_BYTES;
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
    const bytesRead = await readPart(fd, buffer, length, length, sync);
    length += bytesRead;
    if (bytesRead < wanted) return new Uint8Array(buffer.buffer, buffer.byteOffset, length);
  }
}

/**
 * The file from an open descriptor in chunks of at most `chunkBytes`, read into one buffer that
 * every chunk is a view of (so a chunk is valid until the next is asked for), until a read finds
 * the end: a file that grows while it is read is read to its new end.
 */
export async function* readInChunks(
  fd: number,
  sizeHint: number,
  chunkBytes: number,
): AsyncGenerator<Uint8Array> {
  const sync = sizeHint < SYNC_READ_BYTES;
  // Room for one byte more than a small file holds, so one read finds its end.
  const buffer = Buffer.allocUnsafeSlow(Math.min(chunkBytes, sizeHint + 1));
  let position = 0;
  for (;;) {
    let filled = 0;
    while (filled < buffer.length) {
      const wanted = buffer.length - filled;
      const bytesRead = await readPart(fd, buffer, filled, position + filled, sync);
      filled += bytesRead;
      // A short read of a regular file means its end, as in readWhole.
      if (bytesRead < wanted) break;
    }
    // A plain Uint8Array view: Buffer's slice() would not copy, and a reader keeping a chunk
    // with slice() expects a copy.
    if (filled > 0) yield new Uint8Array(buffer.buffer, buffer.byteOffset, filled);
    if (filled < buffer.length) return;
    position += filled;
  }
}

/** Make a rename durable. Directories cannot be opened for fsync everywhere (Windows): best effort. */
export async function syncDirectory(dir: string): Promise<void> {
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

export function toFileStat(stats: Stats): FileStat {
  const kind = stats.isFile() ? "file" : stats.isDirectory() ? "directory" : "other";
  return { kind, size: kind === "file" ? stats.size : 0, mode: stats.mode & 0o7777 };
}

export function direntKind(entry: Dirent): DirEntry["kind"] {
  if (entry.isFile()) return "file";
  if (entry.isDirectory()) return "directory";
  if (entry.isSymbolicLink()) return "symlink";
  return "other";
}
