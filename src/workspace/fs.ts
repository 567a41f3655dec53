import { CodedError } from "../shared/coded-error.js";
import type { ProtectedPaths } from "./protected.js";

/**
 * The workspace file-system seam. Tools see only this interface, so the same tool runs on
 * a real directory (DiskWorkspaceFs) or an in-memory repository (MemoryWorkspaceFs).
 *
 * Every `path` argument is workspace-relative and untrusted: each implementation applies the
 * boundary rules (see boundary.ts) before touching anything, and reports failures as
 * `WorkspaceError` with messages that name only the relative path, never a host path.
 */
export interface WorkspaceFs {
  /** A stable label for messages (never an absolute host path). */
  readonly label: string;

  /**
   * What no write may change (see protected.ts): `writeFileAtomic` refuses these paths, by the
   * name given and by where it leads, with PROTECTED_PATH. Reading them stays allowed.
   */
  readonly protectedPaths: ProtectedPaths;

  /**
   * Check a path against the workspace boundary and return its canonical relative POSIX form
   * ("." for the root). On disk, symlinks in existing ancestors are resolved, so two spellings
   * of one file yield one canonical path.
   */
  resolve(path: string): Promise<string>;

  /** File kind and size, or undefined when nothing exists at the path. */
  stat(path: string): Promise<FileStat | undefined>;

  /** Whole file contents. NOT_FOUND, IS_DIRECTORY. */
  readFile(path: string): Promise<Uint8Array>;

  /**
   * The file's contents in order, in chunks of at most `chunkBytes` (default READ_CHUNK_BYTES),
   * from one open of the file: what reads a large file without holding it whole. A chunk is valid
   * only until the next one is asked for (an implementation may reuse one buffer); an empty file
   * yields none. The errors of readFile, raised when iteration starts.
   */
  readChunks(path: string, options?: ChunkOptions): AsyncIterable<Uint8Array>;

  /**
   * Replace (or create) a file atomically: readers see either the old or the new bytes.
   * Parent directories are created; an existing file's mode is kept.
   * `expectedVersion`: the SHA-256 hex the current bytes must still have at commit time
   * (`null`: the file must not exist); otherwise STALE_VERSION and nothing changes.
   * A protected path (see `protectedPaths`) is PROTECTED_PATH and nothing changes.
   */
  writeFileAtomic(path: string, data: Uint8Array, options?: WriteOptions): Promise<void>;

  /** Directory entries, sorted by name; never lists the reserved `.harness` directory. */
  readDir(path: string): Promise<DirEntry[]>;

  /**
   * Files matching a glob pattern under `cwd` (default the root), as workspace-relative POSIX
   * paths in stable sorted order. Never descends into symlinked directories or `.harness`.
   */
  glob(pattern: string, options?: GlobOptions): Promise<string[]>;
}

export interface FileStat {
  kind: "file" | "directory" | "other";
  size: number;
  /** Permission bits (mode & 0o7777). */
  mode: number;
}

export interface DirEntry {
  name: string;
  kind: "file" | "directory" | "symlink" | "other";
}

export interface WriteOptions {
  expectedVersion?: string | null;
}

export interface GlobOptions {
  cwd?: string;
}

export interface ChunkOptions {
  /** Largest chunk in bytes (at least 1). */
  chunkBytes?: number;
}

/** The chunk size readChunks uses unless asked for another: large enough that a read costs little per byte. */
export const READ_CHUNK_BYTES = 1024 * 1024;

/** The chunk size asked for, checked: a whole number of bytes, at least 1. */
export function chunkSize(options: ChunkOptions | undefined): number {
  const size = options?.chunkBytes ?? READ_CHUNK_BYTES;
  if (!Number.isSafeInteger(size) || size < 1)
    throw new RangeError(`chunkBytes must be a positive integer, not ${size}`);
  return size;
}

/** Chunks of bytes already in memory, as readChunks yields them (views, no copies). */
export async function* chunksOf(bytes: Uint8Array, options?: ChunkOptions): AsyncGenerator<Uint8Array> {
  const size = chunkSize(options);
  for (let start = 0; start < bytes.byteLength; start += size) yield bytes.subarray(start, start + size);
}

export type WorkspaceErrorCode =
  | "PATH_ESCAPE"
  | "RESERVED_PATH"
  | "PROTECTED_PATH"
  | "INVALID_PATH"
  | "NOT_FOUND"
  | "IS_DIRECTORY"
  | "NOT_A_DIRECTORY"
  | "STALE_VERSION"
  /** Another process held the file's write lock too long; nothing was written. */
  | "FILE_BUSY"
  | "IO_ERROR";

export class WorkspaceError extends CodedError<WorkspaceErrorCode> {
  override readonly name = "WorkspaceError";
  constructor(
    code: WorkspaceErrorCode,
    /** The offending relative path as given (safe to show to a model). */
    readonly path: string,
    message: string,
  ) {
    super(code, message);
  }
}

/** The directory harness keeps its own state in; no tool may touch it. */
export const RESERVED_DIR = ".harness";
