import {
  checkGlobPattern,
  globMatcher,
  isReservedParts,
  joinParts,
  lexicalParts,
  quote,
  relativeParts,
} from "./boundary.js";
import {
  type ChunkOptions,
  chunksOf,
  type DirEntry,
  type FileStat,
  type GlobOptions,
  WorkspaceError,
  type WorkspaceFs,
  type WriteOptions,
} from "./fs.js";
import { compareCodeUnits } from "./order.js";
import { DEFAULT_PROTECTED_PATHS, type ProtectedPaths } from "./protected.js";
import { versionOf } from "./version.js";

const DEFAULT_FILE_MODE = 0o644;
const DIRECTORY_MODE = 0o755;

interface MemoryFile {
  bytes: Uint8Array;
  mode: number;
}

/**
 * An in-memory workspace with the same contract as DiskWorkspaceFs (lexical boundary only:
 * there are no symlinks). Directories exist exactly when some file lies below them, plus the
 * root. Bytes are copied on the way in and out, so callers cannot alias the stored content.
 */
export class MemoryWorkspaceFs implements WorkspaceFs {
  readonly label: string;
  readonly protectedPaths: ProtectedPaths;
  readonly #files = new Map<string, MemoryFile>();

  /**
   * `files`: initial contents by workspace-relative path (strings are stored as UTF-8). Paths go
   * through the lexical boundary, except that `.harness/...` is allowed so tests can prove the
   * reserved directory stays hidden.
   */
  constructor(
    files: Record<string, string | Uint8Array> = {},
    options: { label?: string; protectedPaths?: ProtectedPaths } = {},
  ) {
    this.label = options.label ?? "memory";
    this.protectedPaths = options.protectedPaths ?? DEFAULT_PROTECTED_PATHS;
    for (const [p, content] of Object.entries(files)) {
      const key = joinParts(lexicalParts(p));
      const bytes = typeof content === "string" ? new TextEncoder().encode(content) : content.slice();
      this.#assertPlaceable(key, p);
      this.#files.set(key, { bytes, mode: DEFAULT_FILE_MODE });
    }
  }

  async resolve(p: string): Promise<string> {
    return normalize(p);
  }

  async stat(p: string): Promise<FileStat | undefined> {
    const key = normalize(p);
    const file = this.#files.get(key);
    if (file !== undefined) return { kind: "file", size: file.bytes.byteLength, mode: file.mode };
    if (this.#isDirectory(key)) return { kind: "directory", size: 0, mode: DIRECTORY_MODE };
    return undefined;
  }

  async readFile(p: string): Promise<Uint8Array> {
    return this.#stored(p).slice();
  }

  async *readChunks(p: string, options?: ChunkOptions): AsyncGenerator<Uint8Array> {
    // A copy taken at the start: the chunks are of the file as it was when reading began.
    yield* chunksOf(this.#stored(p).slice(), options);
  }

  /** The stored bytes of a file (not a copy), or the error readFile reports. */
  #stored(p: string): Uint8Array {
    const key = normalize(p);
    const file = this.#files.get(key);
    if (file !== undefined) return file.bytes;
    if (this.#isDirectory(key)) throw new WorkspaceError("IS_DIRECTORY", p, `${quote(p)} is a directory`);
    if (this.#fileAncestor(key) !== undefined) {
      throw new WorkspaceError("NOT_A_DIRECTORY", p, `${quote(p)} has a parent that is not a directory`);
    }
    throw new WorkspaceError("NOT_FOUND", p, `${quote(p)} does not exist`);
  }

  async writeFileAtomic(p: string, data: Uint8Array, options: WriteOptions = {}): Promise<void> {
    const key = normalize(p);
    if (key !== ".") this.protectedPaths.assertWritable(p, key.split("/"));
    if (key === "." || this.#isDirectory(key))
      throw new WorkspaceError("IS_DIRECTORY", p, `${quote(p)} is a directory`);
    this.#assertPlaceable(key, p);
    const previous = this.#files.get(key);
    const expected = options.expectedVersion;
    if (expected === null && previous !== undefined) {
      throw new WorkspaceError("STALE_VERSION", p, `${quote(p)} was created by someone else in the meantime`);
    }
    if (typeof expected === "string" && (previous === undefined || versionOf(previous.bytes) !== expected)) {
      throw new WorkspaceError("STALE_VERSION", p, `${quote(p)} changed since it was read`);
    }
    this.#files.set(key, { bytes: data.slice(), mode: previous?.mode ?? DEFAULT_FILE_MODE });
  }

  async readDir(p: string): Promise<DirEntry[]> {
    const key = normalize(p);
    if (this.#files.has(key))
      throw new WorkspaceError("NOT_A_DIRECTORY", p, `${quote(p)} is not a directory`);
    if (!this.#isDirectory(key)) {
      if (this.#fileAncestor(key) !== undefined) {
        throw new WorkspaceError("NOT_A_DIRECTORY", p, `${quote(p)} has a parent that is not a directory`);
      }
      throw new WorkspaceError("NOT_FOUND", p, `${quote(p)} does not exist`);
    }
    const prefix = key === "." ? "" : `${key}/`;
    const entries = new Map<string, DirEntry["kind"]>();
    for (const path of this.#files.keys()) {
      if (!path.startsWith(prefix)) continue;
      const rest = path.slice(prefix.length);
      const slash = rest.indexOf("/");
      const name = slash === -1 ? rest : rest.slice(0, slash);
      if (key === "." && isReservedParts([name])) continue;
      entries.set(name, slash === -1 ? "file" : "directory");
    }
    return [...entries]
      .map(([name, kind]) => ({ name, kind }))
      .sort((a, b) => compareCodeUnits(a.name, b.name));
  }

  async glob(pattern: string, options: GlobOptions = {}): Promise<string[]> {
    const normalized = checkGlobPattern(pattern);
    const cwdInput = options.cwd ?? ".";
    const cwd = normalize(cwdInput);
    if (this.#files.has(cwd)) {
      throw new WorkspaceError("NOT_A_DIRECTORY", cwdInput, `${quote(cwdInput)} is not a directory`);
    }
    if (!this.#isDirectory(cwd))
      throw new WorkspaceError("NOT_FOUND", cwdInput, `${quote(cwdInput)} does not exist`);
    const matches = globMatcher(normalized);
    const prefix = cwd === "." ? "" : `${cwd}/`;
    const result: string[] = [];
    for (const path of this.#files.keys()) {
      if (!path.startsWith(prefix) || isReservedParts(path.split("/"))) continue;
      if (matches(path.slice(prefix.length))) result.push(path);
    }
    return result.sort(compareCodeUnits);
  }

  /** Test support: change a file's permission bits (the disk equivalent is chmod). */
  setMode(p: string, mode: number): void {
    const file = this.#files.get(normalize(p));
    if (file === undefined) throw new WorkspaceError("NOT_FOUND", p, `${quote(p)} does not exist`);
    file.mode = mode & 0o7777;
  }

  /** Every file's bytes by canonical path, sorted, including `.harness` (a copy). */
  snapshot(): Record<string, Uint8Array> {
    const keys = [...this.#files.keys()].sort(compareCodeUnits);
    return Object.fromEntries(keys.map((key) => [key, (this.#files.get(key) as MemoryFile).bytes.slice()]));
  }

  #isDirectory(key: string): boolean {
    if (key === ".") return true;
    const prefix = `${key}/`;
    for (const path of this.#files.keys()) if (path.startsWith(prefix)) return true;
    return false;
  }

  /** The nearest ancestor of `key` that is a file, if any (then `key` cannot exist). */
  #fileAncestor(key: string): string | undefined {
    const parts = key.split("/");
    for (let i = 1; i < parts.length; i++) {
      const ancestor = parts.slice(0, i).join("/");
      if (this.#files.has(ancestor)) return ancestor;
    }
    return undefined;
  }

  #assertPlaceable(key: string, original: string): void {
    if (this.#fileAncestor(key) !== undefined) {
      throw new WorkspaceError(
        "NOT_A_DIRECTORY",
        original,
        `a parent of ${quote(original)} is a file, not a directory`,
      );
    }
    if (this.#isDirectory(key))
      throw new WorkspaceError("IS_DIRECTORY", original, `${quote(original)} is a directory`);
  }
}

function normalize(p: string): string {
  return joinParts(relativeParts(p));
}
