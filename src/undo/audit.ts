import type { ArtifactStore } from "../artifacts/store.js";
import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import {
  type ChangeSet,
  diffManifests,
  type Entry,
  isDir,
  isUnread,
  type Manifest,
} from "../workspace/manifest.js";
import { TreeExcludes } from "../workspace/tree-excludes.js";
import { recordedBase, replayTree } from "./replay.js";
import { scanTree } from "./scan.js";

export interface TreeAudit {
  base: EventData<"workspace.base">;
  /** Files (and links) the record says the workspace holds now. */
  expectedFiles: number;
  /** How the workspace differs from its recorded base plus every recorded change: what happened outside the record. */
  outside: ChangeSet;
  /** Changes the session itself found made by no call (a person, another process) and journaled as such. */
  recordedOutside: number;
  /**
   * Entries in the workspace that the record holds only by kind (a FIFO, socket or device) or by
   * size (a file over the size limit): their content is not compared, so no audit can vouch for it.
   */
  unverified: { path: string; entry: Entry }[];
}

/**
 * Replay the session's record (base tree + every `workspace.changed`) and compare the result with
 * the workspace's tree now. Any difference is a change the record does not hold: who made it is
 * not known, that it happened is.
 */
export async function auditWorkspace(
  records: readonly AnyRecord[],
  artifacts: ArtifactStore,
  root: string,
): Promise<TreeAudit> {
  const { base, tree, directories } = await recordedBase(records, artifacts);
  // Left out as the scan leaves them out: a session resumed by a later harness may have recorded
  // paths its base's excludes do not cover.
  const expected = withoutExcluded(replayTree(tree, records), new TreeExcludes(base.excluded));
  const current = await scanTree(root, base.excluded, { directories });
  const recordedOutside = records.filter(
    (r) => r.type === "workspace.changed" && r.data.source === "outside",
  ).length;
  let expectedFiles = 0;
  for (const entry of expected.values()) if (!isDir(entry)) expectedFiles += 1;
  const unverified: TreeAudit["unverified"] = [];
  for (const [path, entry] of current) if (isUnread(entry)) unverified.push({ path, entry });
  unverified.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { base, expectedFiles, outside: diffManifests(expected, current), recordedOutside, unverified };
}

function withoutExcluded(tree: Manifest, excludes: TreeExcludes): Manifest {
  const kept = new Map<string, Entry>();
  for (const [path, entry] of tree) if (!excludes.excludes(path)) kept.set(path, entry);
  return kept;
}
