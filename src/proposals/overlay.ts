import type { ProposalPort, ProposalRecord } from "../runtime/ports.js";
import { sha256Hex } from "../shared/hash.js";
import { checkGlobPattern, globMatcher, quote, relativeParts } from "../workspace/boundary.js";
import {
  type ChunkOptions,
  chunksOf,
  type DirEntry,
  type FileStat,
  type GlobOptions,
  WorkspaceError,
  type WorkspaceFs,
  type WriteOptions,
} from "../workspace/fs.js";
import { compareCodeUnits } from "../workspace/order.js";
import type { ProtectedPaths } from "../workspace/protected.js";
import { versionOf } from "../workspace/version.js";
import { fileDiff } from "./diff.js";

/**
 * Propose mode's file system: a copy-on-write layer over the workspace that never writes to it.
 *
 * A proposing call gets a view (`begin(callId).fs`) on which reads, stat, readDir and glob see
 * the workspace with every earlier proposal laid over it (the preview), and `writeFileAtomic`
 * captures a proposal instead of writing: the path, the version of the real file it is based on
 * (null for a new file), the full proposed content and a unified diff against that base.
 * `finish()` ends the call: its proposals become part of the preview and are returned for the
 * journal; a write after that (a handler abandoned by its timeout) is refused, so nothing is
 * ever proposed without being recorded.
 *
 * Several proposals on one file. At most one proposal per file is pending; a later write to the
 * same file supersedes it only if it is explicitly based on the preview: its expectedVersion is
 * the version of the proposed content. The superseding proposal keeps the ORIGINAL base version
 * and its diff is against the original file, so the reviewer sees and applies one change from
 * the file as it is on disk. Any other write to that file is a STALE_VERSION conflict (based on
 * the original: the earlier proposal would be silently lost; no expected version: the writer has
 * not seen the preview). This keeps the one-proposal-per-file guarantee ("a second change must not use the
 * old base while looking like it continues the first preview") without forbidding an agent from
 * refining its own proposal. A superseding write also fails when the real file has changed since
 * the first proposal: that proposal can only conflict when applied, so building on it is futile.
 */
export class ProposalOverlay implements ProposalPort {
  readonly #base: WorkspaceFs;
  /** Pending proposals by canonical path: the committed preview. */
  readonly #proposals = new Map<string, Held>();

  /**
   * `existing`: the session's pending (not yet applied) proposals, so a resumed session sees
   * its own preview; a later record for a path replaces an earlier one.
   */
  constructor(base: WorkspaceFs, existing: Iterable<ProposalRecord> = []) {
    this.#base = base;
    for (const record of existing) {
      // A sub-agent's deletion or artifact proposal is not part of the preview (its content is
      // not text held here): the file is seen as it is, and a later write replaces the proposal.
      if (record.deleted === true || record.content_artifact !== undefined) {
        this.#proposals.delete(record.path);
        continue;
      }
      this.#proposals.set(record.path, held(record));
    }
  }

  /** The pending proposals, one per path, sorted by path. */
  get proposals(): ProposalRecord[] {
    return [...this.#proposals.values()]
      .map((entry) => ({ ...entry.record }))
      .sort((a, b) => compareCodeUnits(a.path, b.path));
  }

  begin(callId: string): { fs: WorkspaceFs; finish(): ProposalRecord[] } {
    const view = new OverlayView(this.#base, this.#proposals, callId);
    return {
      fs: view,
      finish: () => {
        const staged = view.close();
        for (const entry of staged) this.#proposals.set(entry.record.path, entry);
        return staged.map((entry) => ({ ...entry.record }));
      },
    };
  }
}

/** The identifier of the proposal a call makes for a path: stable, so a retry finds it again. */
export function proposalIdFor(callId: string, path: string): string {
  return `p-${sha256Hex(`${callId}\n${path}`).slice(0, 16)}`;
}

interface Held {
  record: ProposalRecord;
  bytes: Uint8Array;
}

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const NEW_FILE_MODE = 0o644;
const DIRECTORY_MODE = 0o755;

function held(record: ProposalRecord): Held {
  return { record: { ...record }, bytes: encoder.encode(record.content) };
}

/** The diff from the real file; a file that is not UTF-8 text is shown as replaced whole. */
function previewDiff(path: string, real: Uint8Array | undefined, content: string): string {
  return fileDiff(path, real ?? null, encoder.encode(content));
}

/** One call's view: the workspace, the committed proposals, then this call's own writes. */
class OverlayView implements WorkspaceFs {
  readonly label: string;
  readonly #staged = new Map<string, Held>();
  #closed = false;

  constructor(
    private readonly base: WorkspaceFs,
    private readonly committed: ReadonlyMap<string, Held>,
    private readonly callId: string,
  ) {
    this.label = `${base.label} (proposals)`;
  }

  get protectedPaths(): ProtectedPaths {
    return this.base.protectedPaths;
  }

  close(): Held[] {
    this.#closed = true;
    return [...this.#staged.values()];
  }

  resolve(p: string): Promise<string> {
    return this.base.resolve(p);
  }

  async stat(p: string): Promise<FileStat | undefined> {
    const path = await this.base.resolve(p);
    const proposal = this.#proposal(path);
    if (proposal !== undefined) {
      const real = await this.base.stat(path);
      const mode = real?.kind === "file" ? real.mode : NEW_FILE_MODE;
      return { kind: "file", size: proposal.bytes.byteLength, mode };
    }
    if (this.#hasProposalBelow(path)) return { kind: "directory", size: 0, mode: DIRECTORY_MODE };
    return this.base.stat(path);
  }

  async readFile(p: string): Promise<Uint8Array> {
    const path = await this.base.resolve(p);
    const proposal = this.#proposal(path);
    if (proposal !== undefined) return proposal.bytes.slice();
    if (this.#hasProposalBelow(path))
      throw new WorkspaceError("IS_DIRECTORY", p, `${quote(p)} is a directory`);
    return this.base.readFile(path);
  }

  async *readChunks(p: string, options?: ChunkOptions): AsyncGenerator<Uint8Array> {
    const path = await this.base.resolve(p);
    const proposal = this.#proposal(path);
    if (proposal !== undefined) {
      // A copy, as readFile gives: a chunk changed by its reader must not change the proposal.
      yield* chunksOf(proposal.bytes.slice(), options);
      return;
    }
    if (this.#hasProposalBelow(path))
      throw new WorkspaceError("IS_DIRECTORY", p, `${quote(p)} is a directory`);
    yield* this.base.readChunks(path, options);
  }

  async writeFileAtomic(p: string, data: Uint8Array, options: WriteOptions = {}): Promise<void> {
    if (this.#closed) {
      throw new WorkspaceError(
        "IO_ERROR",
        p,
        `the call that tried to change ${quote(p)} has already ended; nothing was proposed`,
      );
    }
    const path = await this.base.resolve(p);
    if (path === ".") throw new WorkspaceError("IS_DIRECTORY", p, `${quote(p)} is the workspace root`);
    // Refused now, not recorded for a later apply (which refuses it again).
    this.protectedPaths.assertWritable(p, relativeParts(p), path.split("/"));
    await this.#assertPlaceable(path, p);

    const previous = this.#proposal(path);
    const realBytes = await this.#realBytes(path);
    const current = previous?.bytes ?? realBytes;
    this.#checkExpected(p, options.expectedVersion, current, previous);
    if (previous !== undefined) {
      const realVersion = realBytes === undefined ? null : versionOf(realBytes);
      if (realVersion !== previous.record.base_version) {
        throw new WorkspaceError(
          "STALE_VERSION",
          p,
          `${quote(p)} changed in the workspace after proposal ${previous.record.proposal_id} was made; ` +
            "that proposal will conflict when applied, so it cannot be extended",
        );
      }
    }

    let content: string;
    try {
      content = strictDecoder.decode(data);
    } catch {
      throw new WorkspaceError(
        "IO_ERROR",
        p,
        `a proposal must be UTF-8 text; the bytes for ${quote(p)} are not`,
      );
    }
    const baseVersion = previous ? previous.record.base_version : realBytes ? versionOf(realBytes) : null;
    const bytes = data.slice();
    this.#staged.set(path, {
      bytes,
      record: {
        proposal_id: proposalIdFor(this.callId, path),
        path,
        base_version: baseVersion,
        content,
        content_sha256: versionOf(bytes),
        diff: previewDiff(path, realBytes, content),
      },
    });
  }

  async readDir(p: string): Promise<DirEntry[]> {
    const path = await this.base.resolve(p);
    if (this.#proposal(path) !== undefined) {
      throw new WorkspaceError("NOT_A_DIRECTORY", p, `${quote(p)} is not a directory`);
    }
    const entries = new Map<string, DirEntry["kind"]>();
    let baseMissing: unknown;
    try {
      for (const entry of await this.base.readDir(path)) entries.set(entry.name, entry.kind);
    } catch (error) {
      if (!(error instanceof WorkspaceError && error.code === "NOT_FOUND")) throw error;
      baseMissing = error;
    }
    const prefix = path === "." ? "" : `${path}/`;
    let proposed = false;
    for (const key of this.#proposedPaths()) {
      if (!key.startsWith(prefix)) continue;
      proposed = true;
      const rest = key.slice(prefix.length);
      const slash = rest.indexOf("/");
      const name = slash === -1 ? rest : rest.slice(0, slash);
      if (!entries.has(name)) entries.set(name, slash === -1 ? "file" : "directory");
    }
    if (baseMissing !== undefined && !proposed) throw baseMissing;
    return [...entries]
      .map(([name, kind]) => ({ name, kind }))
      .sort((a, b) => compareCodeUnits(a.name, b.name));
  }

  async glob(pattern: string, options: GlobOptions = {}): Promise<string[]> {
    const normalized = checkGlobPattern(pattern);
    const cwd = await this.base.resolve(options.cwd ?? ".");
    const prefix = cwd === "." ? "" : `${cwd}/`;
    const proposed = [...this.#proposedPaths()].filter((key) => key.startsWith(prefix));
    let found: string[] = [];
    try {
      found = await this.base.glob(pattern, options);
    } catch (error) {
      if (!(error instanceof WorkspaceError && error.code === "NOT_FOUND" && proposed.length > 0))
        throw error;
    }
    const matches = globMatcher(normalized);
    const all = new Set(found);
    for (const key of proposed) if (matches(key.slice(prefix.length))) all.add(key);
    return [...all].sort(compareCodeUnits);
  }

  #proposal(path: string): Held | undefined {
    return this.#staged.get(path) ?? this.committed.get(path);
  }

  #proposedPaths(): Set<string> {
    return new Set([...this.committed.keys(), ...this.#staged.keys()]);
  }

  #hasProposalBelow(path: string): boolean {
    const prefix = path === "." ? "" : `${path}/`;
    for (const key of this.#proposedPaths()) if (key.startsWith(prefix)) return true;
    return false;
  }

  /** The real file's bytes, or undefined when the workspace has no file there. */
  async #realBytes(path: string): Promise<Uint8Array | undefined> {
    const real = await this.base.stat(path);
    if (real === undefined) return undefined;
    if (real.kind !== "file") throw new WorkspaceError("IS_DIRECTORY", path, `${quote(path)} is a directory`);
    return this.base.readFile(path);
  }

  /** The same placement rules as a real write, against the preview. */
  async #assertPlaceable(path: string, original: string): Promise<void> {
    if (this.#hasProposalBelow(path)) {
      throw new WorkspaceError("IS_DIRECTORY", original, `${quote(original)} is a directory`);
    }
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const ancestor = parts.slice(0, i).join("/");
      const kind = (await this.stat(ancestor))?.kind;
      if (kind === undefined) return;
      if (kind !== "directory") {
        throw new WorkspaceError(
          "NOT_A_DIRECTORY",
          original,
          `a parent of ${quote(original)} is a file, not a directory`,
        );
      }
    }
  }

  #checkExpected(
    original: string,
    expected: string | null | undefined,
    current: Uint8Array | undefined,
    previous: Held | undefined,
  ): void {
    const pending = previous
      ? ` ${quote(original)} has a pending proposal (${previous.record.proposal_id}); read the file again ` +
        "(you will see the proposed content) and base the change on that version"
      : "";
    if (expected === undefined) {
      if (previous !== undefined) {
        throw new WorkspaceError(
          "STALE_VERSION",
          original,
          `the change is not based on a version.${pending}`,
        );
      }
      return;
    }
    if (expected === null) {
      if (current !== undefined) {
        throw new WorkspaceError(
          "STALE_VERSION",
          original,
          `${quote(original)} already exists${previous ? " as a proposal" : ""}.${pending}`,
        );
      }
      return;
    }
    if (current === undefined || versionOf(current) !== expected) {
      const basedOnOriginal = previous !== undefined && expected === previous.record.base_version;
      throw new WorkspaceError(
        "STALE_VERSION",
        original,
        basedOnOriginal
          ? `the change is based on the original file, not on the pending proposal.${pending}`
          : `${quote(original)} changed since it was read.${pending}`,
      );
    }
  }
}
