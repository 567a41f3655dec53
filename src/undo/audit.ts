import type { ArtifactStore } from "../artifacts/store.js";
import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import { type ChangeSet, diffManifests, isDir } from "../workspace/manifest.js";
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
  const expected = replayTree(tree, records);
  const current = await scanTree(root, base.excluded, { directories });
  const recordedOutside = records.filter(
    (r) => r.type === "workspace.changed" && r.data.source === "outside",
  ).length;
  let expectedFiles = 0;
  for (const entry of expected.values()) if (!isDir(entry)) expectedFiles += 1;
  return { base, expectedFiles, outside: diffManifests(expected, current), recordedOutside };
}
