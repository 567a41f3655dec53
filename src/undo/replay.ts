import type { ArtifactStore } from "../artifacts/store.js";
import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import { CodedError } from "../shared/coded-error.js";
import { applyChange, type Manifest, ManifestError, readManifest } from "../workspace/manifest.js";

export class ReplayError extends CodedError<"NO_BASE" | "BASE_MISSING"> {
  override readonly name = "ReplayError";
}

export interface RecordedBase {
  base: EventData<"workspace.base">;
  tree: Manifest;
  /** Whether the session records directories (a version 2 base); older sessions do not. */
  directories: boolean;
}

/**
 * The session's recorded base tree: the manifest its `workspace.base` names, read from the
 * session's artifacts (checked against its SHA-256 there) and parsed. Sessions recorded before
 * harness recorded workspaces have none (NO_BASE).
 */
export async function recordedBase(
  records: readonly AnyRecord[],
  artifacts: ArtifactStore,
): Promise<RecordedBase> {
  const record = records.find((r) => r.type === "workspace.base");
  if (record?.type !== "workspace.base")
    throw new ReplayError(
      "NO_BASE",
      "the session has no recorded base tree (it was recorded before harness recorded the workspace)",
    );
  const bytes = await artifacts.read(record.data.manifest);
  if (bytes === undefined)
    throw new ReplayError(
      "BASE_MISSING",
      `the base manifest ${record.data.manifest.slice(0, 12)} is missing from the session's artifacts`,
    );
  try {
    const { tree, directories } = readManifest(bytes);
    return { base: record.data, tree, directories };
  } catch (error) {
    if (error instanceof ManifestError)
      throw new ReplayError("BASE_MISSING", `the base manifest cannot be read: ${error.message}`);
    throw error;
  }
}

/** The tree the record says the workspace had right after record `seq` (default: now): base plus every change up to it. */
export function replayTree(
  base: Manifest,
  records: readonly AnyRecord[],
  seq = Number.POSITIVE_INFINITY,
): Manifest {
  let tree = base;
  for (const record of records) {
    if (record.seq > seq) break;
    // Not strict, as the recording itself replays: a record whose change does not chain still moves the tree.
    if (record.type === "workspace.changed") tree = applyChange(tree, record.data, { strict: false });
  }
  return tree;
}
