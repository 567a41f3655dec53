import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  type Stats,
  writeFileSync,
  writeSync,
} from "node:fs";
import path from "node:path";
import { errnoCode } from "../shared/errno.js";
import { sha256Hex } from "../shared/hash.js";
import type { Entry, Manifest } from "./manifest.js";
import { TreeExcludes } from "./tree-excludes.js";

/**
 * The workspace tree as a manifest, fast enough to take before and after every shell call.
 *
 * A walk that never follows a symlink lists every regular file and symlink; a file whose stat
 * (size, mtime, ctime, inode, mode) is what it was when it was last hashed keeps that hash, and
 * only the others are read. ctime is in the key because a process can put an old mtime back
 * (`touch -r`) but cannot set ctime. A file changed within the same clock tick as its hashing
 * could keep all of those (the file system's clock is coarse), so such a "racy" entry is hashed
 * again on the next walk, as git does for its index.
 *
 * Every file hashed is also copied, by content, into the workspace's object directory
 * (`.harness/objects/<sha256>`): when a shell command later changes or deletes it, its bytes from
 * before are still there to be kept in the session's artifacts. The stat cache is kept in
 * `.harness/tree-cache.json` so a new process rehashes nothing that did not change.
 */

const CACHE_VERSION = 1;
/** A hash taken less than this after the file's ctime is not trusted on the next walk. */
const RACY_MS = 100;

interface Cached {
  size: number;
  mtime: number;
  ctime: number;
  ino: number;
  mode: number;
  /** sha256 for a file; the target for a symlink. */
  hash?: string;
  link?: string;
  racy: boolean;
}

export interface SnapshotStats {
  /** Regular files and symlinks listed. */
  entries: number;
  /** Files read and hashed this time (their stat changed, or they were new or racy). */
  hashed: number;
  /** Names that could not be recorded: unreadable, or not valid UTF-8. */
  skipped: string[];
  ms: number;
}

export interface TreeSnapshotOptions {
  /** Absolute real path of the workspace root. */
  root: string;
  /** The workspace's state directory (its `.harness`): the object store and the cache live here. */
  stateDir: string;
  /** User-configured excludes, added to `.git/` and `.harness/`. */
  excludes?: readonly string[];
  /** Told now and then while a walk that has taken over a second is still hashing. */
  progress?(done: number, hashed: number): void;
  /** Clock, for tests. */
  now?(): number;
}

export class TreeSnapshot {
  readonly excludes: TreeExcludes;
  private cache = new Map<string, Cached>();
  private loaded = false;
  private unsaved = 0;
  private readonly objects: string;
  private readonly cacheFile: string;
  last: SnapshotStats | undefined;

  constructor(private readonly options: TreeSnapshotOptions) {
    this.excludes = new TreeExcludes(options.excludes ?? []);
    this.objects = path.join(options.stateDir, "objects");
    this.cacheFile = path.join(options.stateDir, "tree-cache.json");
  }

  /** The tree now. Synchronous file system calls: an async call per file costs ten times as much. */
  take(): Manifest {
    this.load();
    const began = Date.now();
    const now = this.options.now ?? Date.now;
    const manifest = new Map<string, Entry>();
    const seen = new Map<string, Cached>();
    const stats: SnapshotStats = { entries: 0, hashed: 0, skipped: [], ms: 0 };
    let lastReport = began;
    const visit = (dir: string, prefix: string): void => {
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch (error) {
        if (errnoCode(error) === "EACCES" || errnoCode(error) === "ENOENT") {
          if (prefix !== "") stats.skipped.push(prefix.slice(0, -1));
          return;
        }
        throw error;
      }
      for (const name of names) {
        const rel = prefix + name;
        // A name that is not UTF-8 cannot be written down as a path; it is left out, and said so.
        if (name.includes("\ufffd")) {
          stats.skipped.push(rel);
          continue;
        }
        const abs = `${dir}/${name}`;
        let st: Stats;
        try {
          st = lstatSync(abs);
        } catch (error) {
          if (errnoCode(error) === "ENOENT") continue;
          throw error;
        }
        if (st.isDirectory()) {
          if (!this.excludes.excludesDir(rel, name)) visit(abs, `${rel}/`);
          continue;
        }
        if (!st.isFile() && !st.isSymbolicLink()) continue;
        if (this.excludes.excludesFile(rel, name)) continue;
        const cached = this.cache.get(rel);
        let entry: Cached | undefined;
        if (cached && !cached.racy && sameStat(cached, st)) entry = cached;
        else {
          entry = this.hash(abs, st, now());
          if (entry === undefined) {
            stats.skipped.push(rel);
            continue;
          }
          stats.hashed += 1;
          this.unsaved += 1;
        }
        seen.set(rel, entry);
        stats.entries += 1;
        manifest.set(
          rel,
          entry.link !== undefined
            ? { link: entry.link }
            : { hash: entry.hash as string, size: entry.size, exec: (entry.mode & 0o100) !== 0 },
        );
        if (this.options.progress && stats.hashed > 0 && Date.now() - lastReport > 1000) {
          lastReport = Date.now();
          this.options.progress(stats.entries, stats.hashed);
        }
      }
    };
    visit(this.options.root, "");
    if (seen.size !== this.cache.size) this.unsaved += 1;
    this.cache = seen;
    stats.ms = Date.now() - began;
    this.last = stats;
    return manifest;
  }

  /** A kept copy of content the tree held, checked against its hash; undefined when not kept. */
  object(hash: string): Uint8Array | undefined {
    if (!/^[0-9a-f]{64}$/.test(hash)) return undefined;
    let bytes: Buffer;
    try {
      bytes = readFileSync(path.join(this.objects, hash));
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return undefined;
      throw error;
    }
    return sha256Hex(bytes) === hash ? bytes : undefined;
  }

  /** Write the stat cache if it changed (temp file and rename: a reader sees the old or the new one). */
  save(): void {
    if (this.unsaved === 0) return;
    const rows = [...this.cache].map(([p, c]) => [
      p,
      c.size,
      c.mtime,
      c.ctime,
      c.ino,
      c.mode,
      c.hash ?? null,
      c.link ?? null,
    ]);
    mkdirSync(this.options.stateDir, { recursive: true });
    const temp = `${this.cacheFile}.${randomBytes(4).toString("hex")}.tmp`;
    writeFileSync(temp, JSON.stringify({ version: CACHE_VERSION, root: this.options.root, rows }), {
      mode: 0o600,
    });
    renameSync(temp, this.cacheFile);
    this.unsaved = 0;
  }

  /** How many files were hashed since the cache was last saved. */
  get unsavedChanges(): number {
    return this.unsaved;
  }

  /**
   * The saved cache, if it is for this root. A cache that cannot be read is ignored (everything is
   * hashed again): it only saves time, never decides a hash on its own (the stat must still match).
   */
  private load(): void {
    if (this.loaded) return;
    this.loaded = true;
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(this.cacheFile, "utf8"));
    } catch {
      return;
    }
    if (typeof value !== "object" || value === null) return;
    const { version, root, rows } = value as { version?: unknown; root?: unknown; rows?: unknown };
    if (version !== CACHE_VERSION || root !== this.options.root || !Array.isArray(rows)) return;
    for (const row of rows) {
      if (!Array.isArray(row) || row.length !== 8) continue;
      const [p, size, mtime, ctime, ino, mode, hash, link] = row as unknown[];
      if (typeof p !== "string" || typeof size !== "number" || typeof mtime !== "number") continue;
      if (typeof ctime !== "number" || typeof ino !== "number" || typeof mode !== "number") continue;
      const entry: Cached = { size, mtime, ctime, ino, mode, racy: false };
      if (typeof hash === "string" && /^[0-9a-f]{64}$/.test(hash)) entry.hash = hash;
      else if (typeof link === "string") entry.link = link;
      else continue;
      this.cache.set(p, entry);
    }
  }

  /** Read, hash and keep one file (or read one link); undefined when it cannot be read. */
  private hash(abs: string, st: Stats, now: number): Cached | undefined {
    const base = { size: st.size, mtime: st.mtimeMs, ctime: st.ctimeMs, ino: st.ino, mode: st.mode };
    const racy = now - st.ctimeMs < RACY_MS;
    try {
      if (st.isSymbolicLink()) return { ...base, link: readlinkSync(abs), racy };
      const bytes = readFileSync(abs);
      const hash = sha256Hex(bytes);
      this.keep(hash, bytes);
      // The bytes read are what the hash says; the size recorded is theirs too.
      return { ...base, size: bytes.byteLength, hash, racy: racy || bytes.byteLength !== st.size };
    } catch (error) {
      const code = errnoCode(error);
      if (code === "EACCES" || code === "ENOENT" || code === "EISDIR") return undefined;
      throw error;
    }
  }

  /** Keep content by its hash in the object directory (written once; never fsynced: a cache of the tree). */
  private keep(hash: string, bytes: Uint8Array): void {
    const target = path.join(this.objects, hash);
    if (existsSync(target)) return;
    mkdirSync(this.objects, { recursive: true, mode: 0o700 });
    const temp = `${target}.${randomBytes(4).toString("hex")}.tmp`;
    const fd = openSync(temp, "w", 0o600);
    try {
      writeSync(fd, bytes);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, target);
  }
}

function sameStat(cached: Cached, st: Stats): boolean {
  return (
    cached.size === st.size &&
    cached.mtime === st.mtimeMs &&
    cached.ctime === st.ctimeMs &&
    cached.ino === st.ino &&
    cached.mode === st.mode
  );
}
