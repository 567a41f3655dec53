import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  type Dirent,
  existsSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  type Stats,
  writeSync,
} from "node:fs";
import path from "node:path";
import { errnoCode } from "../shared/errno.js";
import { sha256Hex } from "../shared/hash.js";
import { BeneathError, HeldDir, openDirBeneath, openParent, readFileBeneath } from "./beneath.js";
import { cacheHolds, LIST_MIN_ENTRIES, TREE_CACHE_FILE, takePrefetchedListing } from "./listing-prefetch.js";
import {
  DIR,
  type Entry,
  type FileEntry,
  isManifestPath,
  type LinkEntry,
  type Manifest,
} from "./manifest.js";
import {
  type BaseKey,
  type BaseScope,
  forgetBase,
  readBaseKey,
  readBaseManifest,
  writeBase,
} from "./tree-base.js";
import { listedUnread, RECORD_MAX_BYTES, unreadEntry } from "./tree-entry.js";
import { TreeExcludes } from "./tree-excludes.js";
import { forEachListed, readListing } from "./tree-list.js";
import { settleNotifications, TreeWatch } from "./tree-watch.js";

export { RECORD_MAX_BYTES } from "./tree-entry.js";

/**
 * The workspace tree as a manifest, fast enough to take before and after every shell call.
 *
 * A walk that never follows a symlink lists every directory (empty ones too: `mkdir -p a/b/c` is
 * a change), regular file and symlink, and records a FIFO, socket or device by its kind and a file
 * over the size limit by its size (neither is read). Everything is read beneath the root through
 * held directory descriptors (beneath.ts): a directory swapped for a link between two snapshots is
 * recorded as that link, and nothing is read through it. A file whose stat
 * (size, mtime, ctime, inode, mode) is what it was when it was last hashed keeps that hash, and
 * only the others are read. ctime is in the key because a process can put an old mtime back
 * (`touch -r`) but cannot set ctime; the device because another file system mounted at a path
 * (or a restored copy) can repeat an inode number. A file changed within the same clock tick as its
 * hashing could keep all of those (the file system's clock is coarse), so such a "racy" entry is
 * hashed again on the next walk, as git does for its index, and is never written to the saved
 * cache: a new process hashes it again too. On a file system whose times have whole seconds
 * (FAT, some network mounts) the tick is taken as two seconds.
 *
 * Every file hashed is also copied, by content, into the workspace's object directory
 * (`.harness/objects/<sha256>`): when a shell command later changes or deletes it, its bytes from
 * before are still there to be kept in the session's artifacts. The stat cache is kept in
 * `.harness/tree-cache.json` so a new process rehashes nothing that did not change.
 */

/** 3: a row a line (2: rows carry the device; racy entries are no longer saved). */
const CACHE_VERSION = 3;
/** The last version written on one line, still read (its rows are the same). */
const WHOLE_CACHE_VERSION = 2;
/** A hash taken less than this after the file's ctime is not trusted on the next walk. */
const RACY_MS = 100;
/** The same, on a file system whose times are whole seconds (FAT's are two). */
const RACY_COARSE_MS = 2_000;
/**
 * How long a walk works before it lets the event loop run. A first walk of a large tree hashes
 * for many seconds; without a break in it a signal (Ctrl-C) waits, a server's other sessions and
 * event streams stall, and a terminal UI freezes.
 */
const WALK_SLICE_MS = 50;

export { LIST_MIN_ENTRIES } from "./listing-prefetch.js";

/**
 * Largest file whose bytes are copied into the object store. A bigger one is hashed in chunks and
 * not kept (an undo reports it as not restorable): a repository's sparse 2 GiB files would
 * otherwise each cost 2 GiB of memory and be written out, dense, into `.harness/objects`.
 */
export const KEEP_MAX_BYTES = 64 * 1024 * 1024;

interface Cached {
  dev: number;
  size: number;
  mtime: number;
  ctime: number;
  ino: number;
  mode: number;
  /**
   * What the manifest records: for a file its sha256, size and exec bit, for a symlink its target.
   * One object per file, shared by every walk's manifest that finds the file unchanged.
   */
  entry: FileEntry | LinkEntry;
  racy: boolean;
}

export interface SnapshotStats {
  /** Entries listed (directories, files, symlinks, special files). */
  entries: number;
  /** Files read and hashed this time (their stat changed, or they were new or racy). */
  hashed: number;
  /** Names that could not be recorded: unreadable, swapped while read, or not valid UTF-8. */
  skipped: string[];
  ms: number;
  /**
   * Everything read, only the paths notifications named, or nothing (no notification);
   * "unchanged": find listed the tree exactly as it did for the last base (`base`), and
   * nothing was read or built.
   */
  walk: "full" | "partial" | "none" | "unchanged";
  /** A full walk from find's listing (tree-list.ts): only what changed was read here. */
  listed?: true;
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
  /** How long a walk works before it lets the event loop run (ms; default 50). */
  sliceMs?: number;
  /** Told what could not be done (a copy not kept); the snapshot goes on. */
  warn?(message: string): void;
  /** Use change notifications to read only what changed (default true; false: walk every time). */
  watch?: boolean;
  /**
   * Files whose content the session's policy keeps from the model (e.g. a denied `.env`): hashed,
   * so a change to them is still recorded, but never copied into the object store, where a command
   * could read what read_file may not (an undo reports them as not restorable instead).
   */
  withheld?(path: string): boolean;
  /** Largest file whose content is read (default RECORD_MAX_BYTES); bigger ones are recorded by size. */
  maxFileBytes?: number;
  /** Fewest cached entries for which a full walk is listed by find (default LIST_MIN_ENTRIES). */
  listMinEntries?: number;
}

/** One snapshot in progress. */
interface Walk {
  now(): number;
  stats: SnapshotStats;
  began: number;
  lastReport: number;
  /** When the walk last let the event loop run. */
  lastYield: number;
  manifest: Map<string, Entry>;
  seen: Map<string, Cached>;
  /** In a partial walk, every path read again or dropped: the only ones that can differ. */
  touched?: Set<string>;
  /** SHA-256 of the find output a full walk was taken from. */
  listing?: string;
}

/** The last base's manifest, found again by `TreeSnapshot.base`. */
export interface UnchangedBase extends BaseKey {
  /** The manifest's canonical bytes, checked against `manifest` (their SHA-256). */
  content: Uint8Array;
}

export class TreeSnapshot {
  readonly excludes: TreeExcludes;
  private cache = new Map<string, Cached>();
  /** The tree at the last snapshot, which notifications are relative to. */
  private current: Map<string, Entry> | undefined;
  private readonly watch: TreeWatch;
  private touched: ReadonlySet<string> | undefined;
  private loaded = false;
  private unsaved = 0;
  private readonly objects: string;
  private readonly cacheFile: string;
  /** Snapshots run one at a time: a walk yields to the event loop, and two must not interleave. */
  private queue: Promise<unknown> = Promise.resolve();
  /**
   * The last snapshot, when it was a full walk from find's listing that hashed nothing racy and
   * left nothing out: the listing it was taken from is then exactly the tree it describes.
   */
  private listed: { manifest: Manifest; listing: string } | undefined;
  last: SnapshotStats | undefined;

  constructor(private readonly options: TreeSnapshotOptions) {
    this.excludes = new TreeExcludes(options.excludes ?? []);
    this.watch = new TreeWatch(options.watch ?? true);
    this.objects = path.join(options.stateDir, "objects");
    this.cacheFile = path.join(options.stateDir, TREE_CACHE_FILE);
  }

  /**
   * The tree now, once notifications already queued have arrived. `full`: walk everything even
   * when the watches say only some paths (or none) changed (a turn's start, a session's base).
   */
  snapshot(options: { full?: boolean } = {}): Promise<Manifest> {
    const taken = this.queue.then(async () => {
      await settleNotifications();
      return this.take(options);
    });
    this.queue = taken.catch(() => undefined);
    return taken;
  }

  /**
   * The tree as of the notifications received so far. Synchronous file system calls (an async
   * call per file costs several times as much), in slices between which the event loop runs.
   */
  private async take(options: { full?: boolean }, listed?: Promise<Buffer | undefined>): Promise<Manifest> {
    // The first walk of a process (its cache is still to be loaded) can start find first: it
    // lists the tree on the other core while this one reads the cache. (A session's base may
    // have listed it just before, in `base`.)
    const early =
      listed !== undefined
        ? listed
        : !this.loaded && this.listable(options) && cacheHolds(this.cacheFile, this.listMinEntries)
          ? this.startListing()
          : undefined;
    this.load();
    let walk = this.newWalk();
    const changed = this.watch.take();
    // Notifications about what is never recorded (harness's own state dir) need no reading.
    const paths = [...changed.paths]
      .filter(
        (rel) => isManifestPath(rel) && !this.excludes.excludes(rel) && !this.excludes.excludesDirPath(rel),
      )
      .sort();
    if (this.current !== undefined && !changed.everything && !options.full) {
      walk.stats.walk = paths.length === 0 ? "none" : "partial";
      walk.manifest = paths.length === 0 ? this.current : new Map(this.current);
      walk.seen = this.cache;
      walk.touched = new Set();
      for (const rel of paths) await this.refresh(rel, walk);
    } else {
      let root: HeldDir;
      try {
        root = HeldDir.openRoot(this.options.root);
      } catch {
        throw new Error(`the workspace ${this.options.root} cannot be read`);
      }
      try {
        // A listing serves a full walk that sets no watches: the session's base and a turn's start
        // before any shell call (a walk that must set them, so the next can be partial, reads
        // itself), and only with a cache to compare with (a first walk reads everything anyway).
        const listing =
          this.cache.size > 0 &&
          this.listable(options) &&
          (early !== undefined || this.cache.size >= this.listMinEntries)
            ? await this.fromListing(root, walk, early)
            : false;
        if (listing) {
          // Nothing is watched: the next snapshot must read the whole tree again.
          this.watch.forget();
          walk.stats.listed = true;
        } else {
          walk = this.newWalk();
          await this.visit(root, "", walk);
        }
      } finally {
        root.close();
      }
      if (walk.seen.size !== this.cache.size) this.unsaved += 1;
    }
    this.cache = walk.seen;
    this.current = walk.manifest;
    this.touched = walk.touched;
    this.listed =
      walk.listing !== undefined && walk.stats.skipped.length === 0 && !anyRacy(walk.seen)
        ? { manifest: walk.manifest, listing: walk.listing }
        : undefined;
    walk.stats.entries = walk.manifest.size;
    walk.stats.ms = Date.now() - walk.began;
    this.last = walk.stats;
    return walk.manifest;
  }

  /**
   * A session's base. First the last base's manifest, when find lists the tree byte for byte as
   * it listed it for that base (tree-base.ts): then the stat cache is not loaded and no manifest is
   * built. Otherwise (no base remembered, find not used for a tree this small, the listing or the
   * kept bytes differ) a full snapshot, from the listing already taken. After a match nothing is
   * watched and no tree is current: the next snapshot walks everything.
   */
  base(): Promise<{ unchanged: UnchangedBase } | { manifest: Manifest }> {
    const taken = this.queue.then(async () => {
      await settleNotifications();
      // A listing the command started before it loaded (listing-prefetch.ts): the base is the
      // tree as it was then. Only the base takes it; a later walk must see the tree as it is.
      const prefetched = takePrefetchedListing(this.options.root);
      // Only a shortcut: whatever goes wrong in it, the ordinary walk records the tree.
      const found = await this.findUnchanged(prefetched).catch(() => undefined);
      if (found !== undefined && "unchanged" in found) return found;
      const listing = found?.listing !== undefined ? Promise.resolve(found.listing) : prefetched;
      return { manifest: await this.take({ full: true }, listing) };
    });
    this.queue = taken.catch(() => undefined);
    return taken;
  }

  private async findUnchanged(
    prefetched: Promise<Buffer | undefined> | undefined,
  ): Promise<{ unchanged: UnchangedBase } | { listing?: Buffer } | undefined> {
    const began = Date.now();
    const full = { full: true };
    const listable =
      this.listable(full) &&
      (this.loaded
        ? this.cache.size > 0 && this.cache.size >= this.listMinEntries
        : cacheHolds(this.cacheFile, this.listMinEntries));
    if (!listable) return undefined;
    const key = readBaseKey(this.options.stateDir, this.scope);
    if (key === undefined) return undefined;
    const early = prefetched ?? this.startListing();
    if (early === undefined) return undefined;
    // Read (and checked) while find lists, on this core.
    const bytes = readBaseManifest(this.options.stateDir, key);
    // Not the kept base whatever find says: the stat cache loads now, beside find, as in `take`.
    if (bytes === undefined) this.load();
    const listing = await early;
    if (bytes === undefined || listing === undefined || sha256Hex(listing) !== key.listing)
      return listing === undefined ? undefined : { listing };
    // The tree is the base; no tree of this process's is current, so the next snapshot walks it all.
    this.watch.forget();
    this.current = undefined;
    this.touched = undefined;
    this.listed = undefined;
    this.last = {
      entries: key.entries,
      hashed: 0,
      skipped: [],
      ms: Date.now() - began,
      walk: "unchanged",
      listed: true,
    };
    return { unchanged: { ...key, content: bytes } };
  }

  /**
   * Remember a session's base (its manifest's bytes, their artifact id and totals) for the next
   * session's `base`, when `manifest` is the last snapshot and that was a full walk from a
   * listing with nothing racy or left out; otherwise forget any base remembered before. Failing to
   * write only costs the next session the ordinary walk.
   */
  rememberBase(
    manifest: Manifest,
    bytes: Uint8Array,
    id: string,
    totals: { files: number; bytes: number },
  ): void {
    const listed = this.listed;
    try {
      if (listed === undefined || listed.manifest !== manifest) {
        this.forgetBase();
        return;
      }
      writeBase(
        this.options.stateDir,
        this.scope,
        { listing: listed.listing, manifest: id, entries: manifest.size, ...totals },
        bytes,
      );
    } catch (error) {
      this.options.warn?.(`could not keep the base for the next session (${errnoCode(error) ?? "error"})`);
    }
  }

  /** Forget the remembered base (the tree is known to have changed since). */
  forgetBase(): void {
    try {
      forgetBase(this.options.stateDir);
    } catch (error) {
      this.options.warn?.(
        `could not forget the base kept for the next session (${errnoCode(error) ?? "error"})`,
      );
    }
  }

  /** What a manifest depends on besides the tree. */
  private get scope(): BaseScope {
    return {
      root: this.options.root,
      excludes: this.excludes.patterns,
      maxFileBytes: this.options.maxFileBytes ?? RECORD_MAX_BYTES,
    };
  }

  private newWalk(): Walk {
    return {
      now: this.options.now ?? Date.now,
      stats: { entries: 0, hashed: 0, skipped: [], ms: 0, walk: "full" },
      began: Date.now(),
      lastReport: Date.now(),
      lastYield: Date.now(),
      manifest: new Map(),
      seen: new Map(),
    };
  }

  private get listMinEntries(): number {
    return this.options.listMinEntries ?? LIST_MIN_ENTRIES;
  }

  /** Whether a full walk may come from find's listing (one that sets no watches). */
  private listable(options: { full?: boolean }): boolean {
    return (options.full === true || !this.watch.active) && !this.watch.watchingAny();
  }

  /** find started on the root held for it; undefined when the root cannot be opened (the walk says so). */
  private startListing(): Promise<Buffer | undefined> | undefined {
    let root: HeldDir;
    try {
      root = HeldDir.openRoot(this.options.root);
    } catch {
      return undefined;
    }
    // Held until find has started in it (its working directory is then that directory).
    return readListing(root.fd, this.options.root).finally(() => root.close());
  }

  /**
   * A full walk from find's listing (tree-list.ts): a file whose listed stat is the cached one
   * keeps its hash, as in `visit`; every other file or link is read through its held parent
   * directory, as `visit` reads it. The rules of what is recorded are `visit`'s: excluded
   * directories and names that are not UTF-8 are left out with everything below them. False
   * when there is no listing or a parent can no longer be opened: the caller walks instead.
   */
  private async fromListing(
    root: HeldDir,
    walk: Walk,
    early: Promise<Buffer | undefined> | undefined,
  ): Promise<boolean> {
    const listing = await (early ?? readListing(root.fd, this.options.root));
    if (listing === undefined) return false;
    walk.listing = sha256Hex(listing);
    const maxBytes = this.options.maxFileBytes ?? RECORD_MAX_BYTES;
    /** Names to read, by parent directory: their stat is not the cached one (or none is cached). */
    const unmatched = new Map<string, string[]>();
    /** A directory left out: everything listed below it (contiguous in the listing) is too. */
    let pruned: string | undefined;
    const whole = forEachListed(listing, (item) => {
      const { rel } = item;
      if (pruned !== undefined) {
        if (rel.startsWith(pruned)) return;
        pruned = undefined;
      }
      const slash = rel.lastIndexOf("/");
      const name = rel.slice(slash + 1);
      if (name.includes("\ufffd")) {
        walk.stats.skipped.push(rel);
        if (item.type === "dir") pruned = `${rel}/`;
        return;
      }
      if (item.type === "dir") {
        if (this.excludes.excludesDir(rel, name)) pruned = `${rel}/`;
        else walk.manifest.set(rel, DIR);
        return;
      }
      if (this.excludes.excludesFile(rel, name)) return;
      const unread = listedUnread(item, maxBytes);
      if (unread !== undefined) {
        walk.manifest.set(rel, unread);
        return;
      }
      const cached = this.cache.get(rel);
      if (cached !== undefined && !cached.racy && sameStat(cached, item)) {
        this.record(rel, cached, walk);
        return;
      }
      const parent = slash === -1 ? "" : rel.slice(0, slash);
      const names = unmatched.get(parent);
      if (names === undefined) unmatched.set(parent, [name]);
      else names.push(name);
    });
    if (!whole) return false;
    for (const [parent, names] of unmatched) {
      let dir: HeldDir;
      try {
        dir = parent === "" ? HeldDir.openRoot(this.options.root) : openDirBeneath(this.options.root, parent);
      } catch (error) {
        if (error instanceof BeneathError || errnoCode(error) === "EACCES") return false;
        throw error;
      }
      try {
        for (const name of names) {
          await this.visitBelow(
            this.entry(dir, parent === "" ? name : `${parent}/${name}`, name, walk),
            walk,
          );
        }
      } finally {
        dir.close();
      }
    }
    return true;
  }

  /**
   * After a snapshot that read only what notifications named: the paths that may differ from the
   * snapshot before it. Undefined after a full walk (anything may differ).
   */
  get lastTouched(): ReadonlySet<string> | undefined {
    return this.touched;
  }

  /** Stop watching the tree (the end of a session). */
  close(): void {
    this.watch.close();
    this.current = undefined;
  }

  /** Read a directory `entry` opened below its parent (none: a file, or left out), then let it go. */
  private async visitBelow(below: HeldDir | undefined, walk: Walk): Promise<void> {
    if (below === undefined) return;
    try {
      await this.visit(below, `${below.rel}/`, walk);
    } finally {
      below.close();
    }
  }

  /** Read one held directory and everything below it into the walk. */
  private async visit(dir: HeldDir, prefix: string, walk: Walk): Promise<void> {
    // Watched through its descriptor: the directory read, whatever its name leads to now.
    this.watch.watch(prefix.slice(0, -1), dir.path, dir.stats.ino);
    let names: Dirent[];
    try {
      names = dir.listTyped();
    } catch (error) {
      if (errnoCode(error) === "EACCES" || errnoCode(error) === "ENOENT" || errnoCode(error) === "ENOTDIR") {
        if (prefix !== "") walk.stats.skipped.push(prefix.slice(0, -1));
        return;
      }
      throw error;
    }
    for (const dirent of names) {
      const { name } = dirent;
      const below = this.entry(dir, prefix + name, name, walk, dirent.isDirectory());
      if (below !== undefined) {
        try {
          await this.visit(below, `${below.rel}/`, walk);
        } finally {
          below.close();
        }
      }
      if (Date.now() - walk.lastYield >= (this.options.sliceMs ?? WALK_SLICE_MS)) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        walk.lastYield = Date.now();
      }
    }
  }

  /**
   * One name found in a held directory (or named by a notification): recorded or left out; a
   * directory to walk into is returned held, for the caller to visit and close. `listed`: what
   * the directory's listing said the name was (true: a directory), when it came from one.
   */
  private entry(
    dir: HeldDir,
    rel: string,
    name: string,
    walk: Walk,
    listed?: boolean,
    retried = false,
  ): HeldDir | undefined {
    // A name that is not UTF-8 cannot be written down as a path; it is left out, and said so.
    if (name.includes("\ufffd")) {
      walk.stats.skipped.push(rel);
      return;
    }
    // Listed as a directory: opened as one at once (the open is checked; no stat is needed first).
    if (listed === true && !retried) return this.directory(dir, rel, name, walk);
    const cached = listed === false ? this.cache.get(rel) : undefined;
    if (cached !== undefined && !cached.racy) {
      // Most files of a later walk are what they were: one lookup by host path finds them so (see
      // HeldDir.statHint). Anything else is looked at again through the held directory.
      const hint = dir.statHint(name);
      if (
        hint !== undefined &&
        sameStat(cached, hint) &&
        !hint.isDirectory() &&
        !this.excludes.excludesFile(rel, name)
      ) {
        if (unreadEntry(hint, this.options.maxFileBytes ?? RECORD_MAX_BYTES) === undefined) {
          this.record(rel, cached, walk);
          return;
        }
      }
    }
    const st = dir.lstat(name);
    if (st === undefined) return;
    if (st.isDirectory()) return this.directory(dir, rel, name, walk, retried);
    if (this.excludes.excludesFile(rel, name)) return;
    const unread = unreadEntry(st, this.options.maxFileBytes ?? RECORD_MAX_BYTES);
    if (unread !== undefined) {
      // Recorded as what it is, never read: a FIFO is not waited on, a huge file not hashed.
      walk.seen.delete(rel);
      walk.manifest.set(rel, unread);
      walk.touched?.add(rel);
      return;
    }
    const known = this.cache.get(rel);
    let entry: Cached | undefined;
    if (known && !known.racy && sameStat(known, st)) entry = known;
    else {
      entry = this.hash(dir, name, rel, st, walk.now());
      if (entry === undefined) {
        walk.stats.skipped.push(rel);
        return;
      }
      walk.stats.hashed += 1;
      this.unsaved += 1;
    }
    this.record(rel, entry, walk);
  }

  /** The directory `name` of a held directory, held for the walk to go into (undefined: left out). */
  private directory(
    dir: HeldDir,
    rel: string,
    name: string,
    walk: Walk,
    retried = false,
  ): HeldDir | undefined {
    if (this.excludes.excludesDir(rel, name)) return;
    let below: HeldDir;
    try {
      below = dir.dir(name);
    } catch (error) {
      // Replaced since it was listed or stat'ed (by a link, a file): read again once as what it is now.
      if (error instanceof BeneathError && error.code !== "OUTSIDE" && !retried)
        return this.entry(dir, rel, name, walk, undefined, true);
      if (error instanceof BeneathError || errnoCode(error) === "EACCES") {
        walk.stats.skipped.push(rel);
        return;
      }
      throw error;
    }
    walk.manifest.set(rel, DIR);
    walk.touched?.add(rel);
    return below;
  }

  /** A file or link the walk found, as hashed now or before. */
  private record(rel: string, entry: Cached, walk: Walk): void {
    walk.seen.set(rel, entry);
    walk.touched?.add(rel);
    walk.manifest.set(rel, entry.entry);
    if (this.options.progress && walk.stats.hashed > 0 && Date.now() - walk.lastReport > 1000) {
      walk.lastReport = Date.now();
      this.options.progress(walk.manifest.size, walk.stats.hashed);
    }
  }

  /**
   * A path a notification named: whatever was recorded at or below it is dropped, and what is
   * there now is read again (a directory walked whole; unchanged files keep their cached hash).
   * It is reached from the root through real directories only: under a parent that is now a link
   * (or a file, or gone) nothing is there, and the parent is recorded as what it is by its own
   * notification.
   */
  private async refresh(rel: string, walk: Walk): Promise<void> {
    // Only a path that was a directory (it was watched) can have entries below it.
    const wasDirectory = this.watch.watching(rel);
    const dropped: string[] = [];
    if (wasDirectory) {
      const below = `${rel}/`;
      for (const path of walk.manifest.keys()) if (path.startsWith(below)) dropped.push(path);
    }
    if (walk.manifest.has(rel)) dropped.push(rel);
    for (const path of dropped) {
      walk.manifest.delete(path);
      walk.touched?.add(path);
    }
    let parent: { dir: HeldDir; name: string } | undefined;
    try {
      parent = openParent(this.options.root, rel);
    } catch (error) {
      if (!(error instanceof BeneathError) && errnoCode(error) !== "EACCES") throw error;
    }
    try {
      const directory = parent?.dir.lstat(parent.name)?.isDirectory() === true;
      if (wasDirectory && !directory) this.watch.unwatchUnder(rel);
      await this.visitBelow(
        parent === undefined ? undefined : this.entry(parent.dir, rel, parent.name, walk),
        walk,
      );
    } finally {
      parent?.dir.close();
    }
    for (const path of dropped) if (!walk.manifest.has(path)) walk.seen.delete(path);
    if (dropped.length > 0) this.unsaved += 1;
  }

  /** A kept copy of content the tree held, checked against its hash; undefined when not kept. */
  object(hash: string): Uint8Array | undefined {
    if (!/^[0-9a-f]{64}$/.test(hash)) return undefined;
    let bytes: Buffer;
    try {
      // Read beneath the state directory like any host read: a link planted there is not followed.
      bytes = readFileBeneath(this.options.stateDir, `objects/${hash}`).bytes;
    } catch (error) {
      if (error instanceof BeneathError || errnoCode(error) === "ENOENT") return undefined;
      throw error;
    }
    return sha256Hex(bytes) === hash ? bytes : undefined;
  }

  /** Write the stat cache if it changed (temp file and rename: a reader sees the old or the new one). */
  save(): void {
    if (this.unsaved === 0) return;
    mkdirSync(this.options.stateDir, { recursive: true });
    const temp = `${this.cacheFile}.${randomBytes(4).toString("hex")}.tmp`;
    // Written a slice of rows at a time: the text of 50,000 rows at once (and an array of them
    // before it) is tens of megabytes held at the end of a first walk, when memory peaks.
    const fd = openSync(temp, "w", 0o600);
    try {
      let text = `{"version":${CACHE_VERSION},"root":${JSON.stringify(this.options.root)},"rows":[\n`;
      let first = true;
      for (const [p, c] of this.cache) {
        // A racy entry is hashed again by whoever walks next, this process or another.
        if (c.racy) continue;
        const { entry } = c;
        const hash = "hash" in entry ? entry.hash : null;
        const link = "link" in entry ? entry.link : null;
        text += `${first ? "" : ",\n"}${JSON.stringify([p, c.dev, c.size, c.mtime, c.ctime, c.ino, c.mode, hash, link])}`;
        first = false;
        if (text.length >= 256 * 1024) {
          writeAll(fd, text);
          text = "";
        }
      }
      writeAll(fd, `${text}${first ? "" : "\n"}]}`);
    } finally {
      closeSync(fd);
    }
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
    let text: string;
    try {
      text = readFileBeneath(this.options.stateDir, path.basename(this.cacheFile)).bytes.toString("utf8");
    } catch {
      return;
    }
    // A row a line: each is parsed alone, so what parsing leaves behind is one row at a time, not
    // every row's array at once beside the whole text (tens of megabytes at a run's start). The
    // file is still one JSON document. A cache of version 2 (one line) is read whole, once.
    const header = text.indexOf("\n");
    if (header === -1) {
      this.loadWhole(text);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(`${text.slice(0, header)}]}`);
    } catch {
      return;
    }
    if (!this.forThisRoot(value, CACHE_VERSION)) return;
    let start = header + 1;
    for (;;) {
      const end = text.indexOf("\n", start);
      if (end === -1) break;
      const stop = text.charCodeAt(end - 1) === 0x2c ? end - 1 : end;
      let row: unknown;
      try {
        row = JSON.parse(text.slice(start, stop));
      } catch {
        // A torn or edited line is one file to hash again; the rest still count.
        row = undefined;
      }
      this.loadRow(row);
      start = end + 1;
    }
  }

  /** A cache on one line: written before rows had lines of their own (version 2), or rewritten so. */
  private loadWhole(text: string): void {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return;
    }
    if (!this.forThisRoot(value, WHOLE_CACHE_VERSION) && !this.forThisRoot(value, CACHE_VERSION)) return;
    const { rows } = value as { rows?: unknown };
    if (Array.isArray(rows)) for (const row of rows) this.loadRow(row);
  }

  private forThisRoot(value: unknown, version: number): boolean {
    if (typeof value !== "object" || value === null) return false;
    const header = value as { version?: unknown; root?: unknown; rows?: unknown };
    return header.version === version && header.root === this.options.root && Array.isArray(header.rows);
  }

  /** One saved row, checked field by field (a row of any other shape is ignored). */
  private loadRow(row: unknown): void {
    if (!Array.isArray(row) || row.length !== 9) return;
    const [p, dev, size, mtime, ctime, ino, mode, hash, link] = row as unknown[];
    if (typeof p !== "string" || typeof size !== "number" || typeof mtime !== "number") return;
    if (typeof ctime !== "number" || typeof ino !== "number" || typeof mode !== "number") return;
    if (typeof dev !== "number") return;
    let entry: FileEntry | LinkEntry;
    if (typeof hash === "string" && /^[0-9a-f]{64}$/.test(hash))
      entry = { hash, size, exec: (mode & 0o100) !== 0 };
    else if (typeof link === "string") entry = { link };
    else return;
    this.cache.set(p, { dev, size, mtime, ctime, ino, mode, entry, racy: false });
  }

  /**
   * Read, hash and keep one file (or read one link) of a held directory, through a descriptor
   * opened beneath it; undefined when it cannot be read or is no longer what the lstat said.
   */
  private hash(dir: HeldDir, name: string, rel: string, st: Stats, now: number): Cached | undefined {
    const base = {
      dev: st.dev,
      size: st.size,
      mtime: st.mtimeMs,
      ctime: st.ctimeMs,
      ino: st.ino,
      mode: st.mode,
    };
    const coarse = st.ctimeMs % 1000 === 0 && st.mtimeMs % 1000 === 0;
    const racy = now - st.ctimeMs < (coarse ? RACY_COARSE_MS : RACY_MS);
    const maxBytes = this.options.maxFileBytes ?? RECORD_MAX_BYTES;
    try {
      if (st.isSymbolicLink()) return { ...base, entry: { link: dir.readlink(name) }, racy };
      const { fd, stats: opened } = dir.open(name);
      try {
        // Replaced since the walk's lstat by something that is not a file: left out, never waited on.
        if (!opened.isFile()) return undefined;
        const whole = opened.size < SCRATCH_BYTES ? readWhole(fd) : undefined;
        if (whole !== undefined) {
          if (whole.byteLength > maxBytes) return undefined;
          const hash = sha256Hex(whole);
          this.keepSafely(hash, () => this.keep(hash, whole), rel);
          // The bytes read are what the hash says; the size recorded is theirs too.
          const size = whole.byteLength;
          return { ...base, size, entry: fileEntry(hash, size, st.mode), racy: racy || size !== st.size };
        }
        // A large file goes through one reused chunk buffer, never whole into memory: a buffer the
        // size of each large file (freed again at once) is what kept a first walk's memory high.
        const chunked = hashInChunks(fd, maxBytes);
        if (chunked === undefined) return undefined;
        let { hash, size } = chunked;
        let changed = size !== st.size;
        if (size <= KEEP_MAX_BYTES) {
          this.keepSafely(
            hash,
            () => {
              const copied = this.keepFrom(fd, hash);
              // Changed between the two reads: what was kept is what the record says (or, grown
              // past what is kept, it is read again at the next walk).
              if (copied === null) changed = true;
              else if (copied !== undefined && copied.hash !== hash) {
                ({ hash, size } = copied);
                changed = true;
              }
            },
            rel,
          );
        }
        return { ...base, size, entry: fileEntry(hash, size, st.mode), racy: racy || changed };
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      if (error instanceof BeneathError) return undefined;
      const code = errnoCode(error);
      if (code === "EACCES" || code === "ENOENT" || code === "EISDIR" || code === "ENXIO") return undefined;
      throw error;
    }
  }

  /** Keep a copy unless the content is withheld; a copy that cannot be written is only warned about. */
  private keepSafely(hash: string, keep: () => void, rel: string): void {
    if (this.options.withheld?.(rel) === true) return;
    try {
      keep();
    } catch (error) {
      // No room to keep a copy: the hash still records what the file was; its bytes cannot be restored.
      this.options.warn?.(`could not keep a copy of ${hash.slice(0, 12)} (${errnoCode(error) ?? "error"})`);
    }
  }

  /**
   * Whether the object directory holds `hash` with bytes that match it, read through the chunk
   * buffer. An existing object is trusted only then: a repository can ship
   * `.harness/objects/<hash of a file>` holding garbage, which would leave that file unrestorable.
   */
  private holds(hash: string): boolean {
    // Most objects of a first walk are new: one stat says so before descriptors are opened.
    if (!existsSync(path.join(this.objects, hash))) return false;
    let parent: { dir: HeldDir; name: string };
    try {
      parent = openParent(this.options.stateDir, `objects/${hash}`);
    } catch (error) {
      if (error instanceof BeneathError || errnoCode(error) === "ENOENT") return false;
      throw error;
    }
    try {
      const { fd, stats } = parent.dir.open(parent.name);
      try {
        return (
          stats.isFile() && stats.size <= KEEP_MAX_BYTES && hashInChunks(fd, KEEP_MAX_BYTES)?.hash === hash
        );
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      if (error instanceof BeneathError || errnoCode(error) === "ENOENT") return false;
      throw error;
    } finally {
      parent.dir.close();
    }
  }

  /**
   * Keep a large file's content, copied from its descriptor chunk by chunk and hashed again on the
   * way: the object holds exactly the bytes its name says, even when the file changed since it was
   * hashed (its new hash is returned then). Undefined when the object is already held; null when
   * the file grew past what is kept (nothing is).
   */
  private keepFrom(fd: number, hash: string): { hash: string; size: number } | undefined | null {
    if (this.holds(hash)) return undefined;
    mkdirSync(this.objects, { recursive: true, mode: 0o700 });
    const temp = path.join(this.objects, `${hash}.${randomBytes(4).toString("hex")}.tmp`);
    const out = openSync(temp, "w", 0o600);
    let copied: { hash: string; size: number } | undefined;
    try {
      copied = hashInChunks(fd, KEEP_MAX_BYTES, out);
    } finally {
      closeSync(out);
    }
    if (copied === undefined || (copied.hash !== hash && this.holds(copied.hash))) {
      rmSync(temp, { force: true });
      return copied ?? null;
    }
    renameSync(temp, path.join(this.objects, copied.hash));
    return copied;
  }

  /** Keep content by its hash in the object directory (written once; never fsynced: a cache of the tree). */
  private keep(hash: string, bytes: Uint8Array): void {
    const target = path.join(this.objects, hash);
    // An existing object is kept only when its bytes match its name: a repository can ship
    // `.harness/objects/<hash of a file>` holding garbage, which would leave that file unrestorable.
    // (Only content seen before is read again: a changed file's new content has no object yet.)
    if (this.holds(hash)) return;
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

/**
 * The buffers every read goes through: the bytes are hashed and copied out synchronously, so no
 * two reads overlap. A first walk reads every file of the tree; a buffer per file (or one grown to
 * each large file and dropped again) left tens of thousands of them to the allocator, which is
 * most of what that walk's memory was. A file of the scratch buffer's size or more is read in
 * chunks instead, and an existing object is checked in chunks too.
 */
const SCRATCH_BYTES = 1024 * 1024;
const scratch = Buffer.allocUnsafeSlow(SCRATCH_BYTES);
const CHUNK_BYTES = 256 * 1024;
const chunk = Buffer.allocUnsafeSlow(CHUNK_BYTES);

/**
 * A small file's bytes through its descriptor, in the shared scratch buffer (valid until the next
 * read); undefined when it has grown to the buffer's size (the caller reads it in chunks).
 */
function readWhole(fd: number): Buffer | undefined {
  let length = 0;
  for (;;) {
    if (length === scratch.length) return undefined;
    const read = readSync(fd, scratch, length, scratch.length - length, length);
    if (read === 0) return scratch.subarray(0, length);
    length += read;
  }
}

/**
 * A file's SHA-256 and size, read through its descriptor a chunk at a time (and written to `out`
 * when given); undefined past `maxBytes`.
 */
function hashInChunks(
  fd: number,
  maxBytes: number,
  out?: number,
): { hash: string; size: number } | undefined {
  const hash = createHash("sha256");
  let size = 0;
  for (;;) {
    const read = readSync(fd, chunk, 0, chunk.length, size);
    if (read === 0) return { hash: hash.digest("hex"), size };
    const bytes = chunk.subarray(0, read);
    hash.update(bytes);
    if (out !== undefined) {
      let written = 0;
      while (written < read) written += writeSync(out, bytes, written, read - written);
    }
    size += read;
    if (size > maxBytes) return undefined;
  }
}

/** All of `text` to the descriptor, as UTF-8. */
function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text, "utf8");
  let written = 0;
  while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
}

function fileEntry(hash: string, size: number, mode: number): FileEntry {
  return { hash, size, exec: (mode & 0o100) !== 0 };
}

/** The stat fields a cached hash is keyed by, from an lstat or find's listing. */
type StatKey = Pick<Stats, "dev" | "size" | "mtimeMs" | "ctimeMs" | "ino" | "mode">;

function sameStat(cached: Cached, st: StatKey): boolean {
  return (
    cached.dev === st.dev &&
    cached.size === st.size &&
    cached.mtime === st.mtimeMs &&
    cached.ctime === st.ctimeMs &&
    cached.ino === st.ino &&
    cached.mode === st.mode
  );
}

/** Whether any entry was hashed within the racy window (hashed again by the next walk). */
function anyRacy(seen: ReadonlyMap<string, Cached>): boolean {
  for (const entry of seen.values()) if (entry.racy) return true;
  return false;
}
