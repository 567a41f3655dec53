import { fileDiff } from "../../shared/unified-diff.js";
import { diffManifests, type Entry, isFile, type Manifest } from "../../workspace/manifest.js";
import { TreeSnapshot } from "../../workspace/tree-snapshot.js";
import { copyStateDir } from "./workspace-copy.js";

/**
 * What a writing child changed in its copy of the workspace: every file, link and directory whose
 * entry differs between the copy's base and the copy now, each with both entries, so a merge can
 * bind the parent's file to the version the child started from.
 *
 * The copy is read by a TreeSnapshot whose state is in the copy's own `.harness` (left out of every
 * manifest): its stat cache from `copyWorkspace` means only what the child touched is hashed
 * again (and kept: the new side of each diff). The base side comes from `contents`, the parent's
 * kept copies of what the copy started from.
 */

export interface ChildChange {
  /** Manifest path. */
  path: string;
  /** Entry in the base (null: the child created it). */
  before: Entry | null;
  /** Entry in the copy now (null: the child deleted it). */
  after: Entry | null;
  /**
   * Lines added and removed, as the one diff (shared/unified-diff.ts) counts them; 0/0 for a
   * binary file, one too large to diff, a link, a directory, or a side whose content is not kept.
   */
  added: number;
  removed: number;
}

export interface ChangesOptions {
  /**
   * Content by SHA-256 for the base side of a diff (the parent's kept contents, e.g.
   * `WorkspaceEffects.kept`): the copy's base keeps none. Without it a modified or deleted file
   * counts 0/0 unless its base content was read here before.
   */
  contents?(hash: string): Uint8Array | undefined;
}

/** The copy's changes since its base, sorted by path. */
export async function childChanges(
  copy: { root: string; base: Manifest },
  options: ChangesOptions = {},
): Promise<ChildChange[]> {
  const tree = new TreeSnapshot({ root: copy.root, stateDir: copyStateDir(copy.root), watch: false });
  let now: Manifest;
  try {
    now = await tree.snapshot({ full: true });
    tree.save();
  } finally {
    tree.close();
  }
  const change = diffManifests(copy.base, now);
  const changes: ChildChange[] = [
    ...change.created.map(({ path, after }) => ({ path, before: null, after })),
    ...change.modified.map(({ path, before, after }) => ({ path, before, after })),
    ...change.deleted.map(({ path, before }) => ({ path, before, after: null })),
  ].map((c) => ({
    ...c,
    ...lineCounts(c.path, c.before, c.after, (hash) => tree.object(hash) ?? options.contents?.(hash)),
  }));
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Lines added and removed between two entries, from the contents the snapshot kept. */
function lineCounts(
  path: string,
  before: Entry | null,
  after: Entry | null,
  kept: (hash: string) => Uint8Array | undefined,
): { added: number; removed: number } {
  const side = (entry: Entry | null): Uint8Array | null | undefined => {
    if (entry === null) return null;
    return isFile(entry) ? kept(entry.hash) : undefined;
  };
  const old = side(before);
  const now = side(after);
  const none = { added: 0, removed: 0 };
  if (old === undefined || now === undefined) return none;
  const diff = fileDiff(path, old, now);
  // A binary or oversized pair is one summary line, not a hunk.
  if (!diff.startsWith("--- ")) return none;
  let added = 0;
  let removed = 0;
  // The first two lines are the `---`/`+++` header; after them a leading sign is a line changed.
  for (const line of diff.split("\n").slice(2)) {
    if (line.startsWith("+")) added += 1;
    else if (line.startsWith("-")) removed += 1;
  }
  return { added, removed };
}
