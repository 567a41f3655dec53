import { z } from "zod";
import type { EventData } from "../journal/vocabulary.js";

/**
 * One path of a workspace tree as the journal records it: a file (content hash, size, executable)
 * or a symlink (its target). A tree (manifest) maps workspace-relative POSIX paths to entries.
 */
export type Entry = EventData<"workspace.changed">["created"][number]["after"];
export type Change = EventData<"workspace.changed">;
export type Tree = Map<string, Entry>;

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const entrySchema = z.union([
  z.object({ hash: hex64, size: z.number().int().nonnegative(), exec: z.boolean() }).strict(),
  z.object({ link: z.string() }).strict(),
]);
/** The manifest JSON `workspace.base` names: an artifact, so external input until parsed. */
const manifestSchema = z.object({ version: z.literal(1), entries: z.record(z.string(), entrySchema) });

export function parseManifest(bytes: Uint8Array): Tree {
  const parsed = manifestSchema.parse(JSON.parse(new TextDecoder().decode(bytes)));
  return new Map(Object.entries(parsed.entries));
}

export function sameEntry(a: Entry | null | undefined, b: Entry | null | undefined): boolean {
  if (a === null || a === undefined || b === null || b === undefined) return (a ?? null) === (b ?? null);
  if ("link" in a || "link" in b) return "link" in a && "link" in b && a.link === b.link;
  return a.hash === b.hash && a.size === b.size && a.exec === b.exec;
}

/** The tree after one recorded change (what the change says it found is not checked here). */
export function applyChange(tree: Tree, change: Change): Tree {
  const next = new Map(tree);
  for (const { path } of change.deleted) next.delete(path);
  for (const { path, after } of change.modified) next.set(path, after);
  for (const { path, after } of change.created) next.set(path, after);
  return next;
}

export interface TreeDiff {
  created: { path: string; after: Entry }[];
  modified: { path: string; before: Entry; after: Entry }[];
  deleted: { path: string; before: Entry }[];
}

/** What turns tree `a` into tree `b`, each list sorted by path. */
export function diffTrees(a: Tree, b: Tree): TreeDiff {
  const diff: TreeDiff = { created: [], modified: [], deleted: [] };
  for (const path of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const before = a.get(path);
    const after = b.get(path);
    if (before === undefined && after !== undefined) diff.created.push({ path, after });
    else if (before !== undefined && after === undefined) diff.deleted.push({ path, before });
    else if (before !== undefined && after !== undefined && !sameEntry(before, after))
      diff.modified.push({ path, before, after });
  }
  return diff;
}
