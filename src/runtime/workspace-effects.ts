import type { ArtifactStore } from "../artifacts/store.js";
import type { AnyNewEvent, AnyRecord, EventData } from "../journal/vocabulary.js";
import { sha256Hex } from "../shared/hash.js";
import {
  applyChange,
  beforeHashes,
  byPath,
  type ChangeSet,
  changeWithoutDirectories,
  DIR,
  diffManifests,
  isDir,
  isEmptyChange,
  type Manifest,
  manifestBytes,
  manifestTotals,
  readManifest,
} from "../workspace/manifest.js";
import type { TreeSnapshot } from "../workspace/tree-snapshot.js";

/** Where workspace records go: the session's journal, and the seq the next record will get. */
export interface EffectsJournal {
  record(events: AnyNewEvent[]): Promise<void>;
  nextSeq(): number;
}

export type ChangeSource = EventData<"workspace.changed">["source"];

/** A change found around one call, to be journaled with its result. */
export interface FoundChange {
  source: ChangeSource;
  change: ChangeSet;
}

/**
 * The session's background processes, as far as the record is concerned: the call whose process
 * changes no call made belong to (undefined: none runs or ran since the last comparison).
 */
export interface BackgroundOwners {
  effectsOwner(): string | undefined;
  /** A comparison was made: processes that have stopped need none any more. */
  effectsCompared(): void;
}

/** Save the stat cache after this many hashed files, so a crash costs little rehashing. */
const SAVE_EVERY = 2_000;

/**
 * The session's record of its workspace: the base tree, and every change to it from then on, with
 * the bytes each change replaced kept in the session's artifacts. The one place that compares the
 * tree with what the journal says it should be (`expected`: the base with every recorded change
 * applied). Built by the embedder for a real directory; sessions without one record nothing.
 */
export class WorkspaceEffects {
  private known: Manifest | undefined;
  /**
   * A base found unchanged (TreeSnapshot.base): its manifest's bytes, read into `expected` only
   * when something first compares with it. A session that changes nothing never builds it.
   */
  private unread: { bytes: Uint8Array; id: string } | undefined;
  /**
   * Whether this session records directories (its base is a version 2 manifest). A session
   * recorded before they were goes on without them, so its record keeps one meaning throughout.
   */
  private directories = true;
  /** How many comparisons around a process are running: what happens meanwhile is that process's. */
  private running = 0;
  /** Paths where the record moved on without a snapshot (file tools) since the last comparison. */
  private since = new Set<string>();
  /** Whether this session recorded a change: the tree is then no longer the base remembered for the next. */
  private moved = false;

  constructor(
    private readonly tree: TreeSnapshot,
    private readonly artifacts: ArtifactStore,
    /** Told when a before-content could not be kept (its object was lost): the record still says what changed. */
    private readonly warn: (message: string) => void = () => undefined,
    /** Background processes: what changed between calls while one ran is its starting call's. */
    private readonly background?: BackgroundOwners,
  ) {}

  /** The tree the record says the workspace has; undefined when this session records none. */
  private get expected(): Manifest | undefined {
    if (this.known === undefined && this.unread !== undefined) {
      this.known = readManifest(this.unread.bytes).tree;
      this.unread = undefined;
    }
    return this.known;
  }

  private set expected(manifest: Manifest | undefined) {
    this.known = manifest;
    this.unread = undefined;
  }

  /** Whether this session records its workspace (it has a base). */
  private get recording(): boolean {
    return this.known !== undefined || this.unread !== undefined;
  }

  /** Content the recording kept (its object store), checked against the hash; undefined when not kept. */
  kept(hash: string): Uint8Array | undefined {
    return this.tree.object(hash);
  }

  /** What `workspace.base` lists as excluded. */
  get excluded(): readonly string[] {
    return this.tree.excludes.patterns;
  }

  /**
   * At a session's start (or resume): the tree the journal says the workspace has. A session
   * without a base (new, or recorded before bases existed) gets one now, journaled once.
   */
  async start(records: readonly AnyRecord[], journal: EffectsJournal): Promise<void> {
    const base = records.find((r) => r.type === "workspace.base");
    if (base === undefined) {
      const found = await this.tree.base();
      let ref: { id: string };
      let totals: { files: number; bytes: number };
      if ("unchanged" in found) {
        // The tree is the last base's (same listing): its manifest's bytes, as they were recorded.
        const { content, files, bytes } = found.unchanged;
        ref = await this.artifacts.put(content);
        totals = { files, bytes };
        this.unread = { bytes: content, id: ref.id };
        this.known = undefined;
      } else {
        const { manifest } = found;
        const content = manifestBytes(manifest);
        ref = await this.artifacts.put(content);
        totals = manifestTotals(manifest);
        this.tree.rememberBase(manifest, content, ref.id, totals);
        this.expected = manifest;
      }
      this.tree.save();
      this.directories = true;
      await journal.record([
        {
          type: "workspace.base",
          data: { manifest: ref.id, files: totals.files, bytes: totals.bytes, excluded: [...this.excluded] },
        },
      ]);
      return;
    }
    const bytes = await this.artifacts.read(base.data.manifest);
    // A base whose manifest is gone cannot be compared with: every file then shows as created.
    const stored = bytes === undefined ? { tree: new Map(), directories: false } : readManifest(bytes);
    this.directories = stored.directories;
    let manifest: Manifest = stored.tree;
    for (const record of records) {
      if (record.type === "workspace.changed")
        manifest = applyChange(manifest, record.data, { strict: false });
    }
    this.expected = manifest;
  }

  /**
   * Compare the tree with the record and journal what no call made (a person, another process, a
   * call whose outcome is unknown after a crash) as `source: "outside"`. `full`: read the whole
   * tree, not only what change notifications named (a turn's start).
   */
  async outside(journal: EffectsJournal, options: { full?: boolean } = {}): Promise<void> {
    if (!this.recording) return;
    // A background process ran meanwhile: the change is the call's that started it (a watcher's
    // writes are undone with that call), not an unknown hand's.
    const owner = this.background?.effectsOwner();
    const found = await this.compare(options.full ?? false);
    this.background?.effectsCompared();
    if (found === undefined) return;
    await this.keepBefores(found);
    const event =
      owner !== undefined
        ? this.event(owner, { source: "shell", change: found })
        : this.event(`outside:${journal.nextSeq()}`, { source: "outside", change: found });
    await journal.record([event]);
  }

  /**
   * Run a process that may change anything in the workspace (a shell call, acceptance commands):
   * outside changes are journaled first, then what the process changed is returned, its
   * before-content already kept, for the caller to journal with the call's result.
   */
  async around<T>(
    source: ChangeSource,
    journal: EffectsJournal,
    run: () => Promise<T>,
  ): Promise<{ value: T; found?: FoundChange }> {
    await this.outside(journal);
    let value: T;
    this.running += 1;
    try {
      value = await run();
    } finally {
      this.running -= 1;
    }
    if (!this.recording) return { value };
    const change = await this.compare(false);
    if (change === undefined) return { value };
    await this.keepBefores(change);
    return { value, found: { source, change } };
  }

  /**
   * Run something beside the calls that may change the workspace (a hook) and journal at once what
   * it changed, as `callId`: nothing else would, and the next comparison would call it `outside`.
   * Inside a call's own comparison (a hook around a shell call's execution) it just runs: what
   * changes then is recorded as that call's.
   */
  async recordAround<T>(
    source: ChangeSource,
    callId: string,
    journal: EffectsJournal,
    run: () => Promise<T>,
  ): Promise<T> {
    if (!this.recording || this.running > 0) return run();
    const { value, found } = await this.around(source, journal, run);
    if (found !== undefined) await journal.record([this.event(callId, found)]);
    return value;
  }

  /**
   * A file tool's own report of its write (its before-content already put into the artifacts by
   * the tool): the record moves on without walking the tree. Excluded paths are dropped. The
   * directories a write made for its file (which the tool does not report) are added as created.
   */
  toolChanged(change: ChangeSet): ChangeSet | undefined {
    const expected = this.expected;
    if (expected === undefined) return undefined;
    const keep = (p: { path: string }) => !this.tree.excludes.excludes(p.path);
    const kept: ChangeSet = {
      created: change.created.filter(keep),
      modified: change.modified.filter(keep),
      deleted: change.deleted.filter(keep),
    };
    if (this.directories) kept.created = [...this.madeParents(kept), ...kept.created].sort(byPath);
    if (isEmptyChange(kept)) return undefined;
    this.moved = true;
    this.expected = applyChange(expected, kept, { strict: false });
    for (const { path } of [...kept.created, ...kept.modified, ...kept.deleted]) this.since.add(path);
    return kept;
  }

  /**
   * Parent directories of the files a tool created that the record does not hold: the tool made
   * them (a write creates missing parents). Sorted by path, a parent before its children.
   */
  private madeParents(change: ChangeSet): ChangeSet["created"] {
    const expected = this.expected as Manifest;
    const made = new Set<string>();
    // A directory the change names itself (a merge's, which reports what it made) is not added twice.
    const named = new Set(change.created.map((entry) => entry.path));
    for (const { path } of change.created) {
      const parts = path.split("/");
      for (let depth = 1; depth < parts.length; depth++) {
        const dir = parts.slice(0, depth).join("/");
        if (this.tree.excludes.excludesDirPath(dir)) break;
        const known = expected.get(dir);
        if ((known !== undefined && isDir(known)) || named.has(dir)) continue;
        made.add(dir);
      }
    }
    return [...made].sort().map((path) => ({ path, after: DIR }));
  }

  /** The `workspace.changed` record of a change. */
  event(callId: string, found: FoundChange): AnyNewEvent {
    return { type: "workspace.changed", data: { call_id: callId, source: found.source, ...found.change } };
  }

  /** Save the stat cache (at the end of a run; a crash only costs rehashing) and stop watching. */
  close(): void {
    this.tree.save();
    // The next session would list the tree only to find it differs, and load the stat cache after
    // find instead of beside it: it takes the ordinary walk at once.
    if (this.moved) this.tree.forgetBase();
    this.tree.close();
  }

  /** The difference between the tree now and the record, which then becomes the record. */
  private async compare(full: boolean): Promise<ChangeSet | undefined> {
    const now = await this.tree.snapshot({ full });
    // The base found unchanged and not read yet (nothing moved the record on since): the tree now,
    // written as its manifest, is compared with the base's bytes first. Reading those into a tree
    // costs twice as much, and is needed only when they differ.
    if (this.known === undefined && this.unread !== undefined) {
      if (sha256Hex(manifestBytes(now)) === this.unread.id) {
        if (this.tree.unsavedChanges >= SAVE_EVERY) this.tree.save();
        this.expected = now;
        return undefined;
      }
    }
    // The same tree object: no notification since the record was last compared.
    if (now === this.expected) return undefined;
    if (this.tree.unsavedChanges >= SAVE_EVERY) this.tree.save();
    // After a partial read, only the paths read again can differ from the last snapshot; the record
    // equals that snapshot unless a file tool moved it on, so its paths are compared too.
    const touched = this.tree.lastTouched;
    const paths = touched ? [...touched, ...this.since] : undefined;
    const found = diffManifests(this.expected as Manifest, now, paths);
    this.since = new Set();
    this.expected = now;
    if (!isEmptyChange(found)) this.moved = true;
    const change = this.directories ? found : changeWithoutDirectories(found);
    return isEmptyChange(change) ? undefined : change;
  }

  /** Every replaced content into the session's artifacts (fsynced there) before a record names it. */
  private async keepBefores(change: ChangeSet): Promise<void> {
    for (const hash of beforeHashes(change)) {
      const bytes = this.tree.object(hash);
      if (bytes === undefined) {
        // Already kept (a file tool put it) or lost: only a lost one is worth a warning.
        if ((await this.artifacts.read(hash).catch(() => undefined)) === undefined) {
          this.warn(
            `the content ${hash.slice(0, 12)} replaced in the workspace was not kept; it cannot be restored`,
          );
        }
        continue;
      }
      await this.artifacts.put(bytes);
    }
  }
}
