import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { ArtifactStore } from "../../artifacts/store.js";
import type { EventData } from "../../journal/vocabulary.js";
import { proposalIdFor } from "../../proposals/overlay.js";
import { clipDiff, fileDiff, RECORDED_DIFF_BYTES } from "../../shared/unified-diff.js";
import { isFile, isLink } from "../../workspace/manifest.js";
import { versionOf } from "../../workspace/version.js";
import type { ChildChange } from "./child-changes.js";

/** Larger text files are proposed as artifacts: a proposal's inline content is in the journal. */
const MAX_INLINE_BYTES = 1024 * 1024;
/** The most one file proposed as an artifact may hold (it is read whole, here and when applied). */
export const MAX_ARTIFACT_PROPOSAL_BYTES = 64 * 1024 * 1024;
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * A `merge: propose` child's changes as the parent's proposals, as propose mode records them:
 * each bound to the version its base had, so `harness diff` shows them and `harness apply`
 * changes each file only if it is still that version.
 *
 * - a created or modified UTF-8 text file up to 1 MiB: its content inline;
 * - a binary file, or a larger one (up to 64 MiB): its content stored in this session's artifacts
 *   (`content_artifact`), only its digest in the journal;
 * - a deleted file: a deletion (`deleted`), applied only if the file still has its base version.
 *
 * Links, and files that replaced something that is not a regular file, are not proposed: listed
 * in the result with why (`skipped`). A directory's own change follows from its files'.
 */
export async function childProposals(
  callId: string,
  copyRoot: string,
  changes: readonly ChildChange[],
  base: (hash: string) => Uint8Array | undefined,
  artifacts: ArtifactStore,
): Promise<{ proposals: EventData<"proposal.recorded">[]; skipped: { path: string; reason: string }[] }> {
  const proposals: EventData<"proposal.recorded">[] = [];
  const skipped: { path: string; reason: string }[] = [];
  for (const change of changes) {
    const { path, before, after } = change;
    if (before !== null && !isFile(before) && (after === null || isFile(after))) {
      if (after !== null || isLink(before))
        skipped.push({
          path,
          reason: isLink(before)
            ? "it changes a symbolic link, which is never proposed"
            : "it replaced something that is not a regular file",
        });
      continue;
    }
    if (after === null) {
      if (before === null || !isFile(before)) continue;
      const old = base(before.hash) ?? null;
      proposals.push({
        proposal_id: proposalIdFor(callId, path),
        call_id: callId,
        path,
        base_version: before.hash,
        content: "",
        content_sha256: before.hash,
        diff: old === null ? `deleted ${path}\n` : clipDiff(fileDiff(path, old, null), RECORDED_DIFF_BYTES),
        deleted: true,
      });
      continue;
    }
    if (!isFile(after)) {
      skipped.push({
        path,
        reason: isLink(after) ? "a symbolic link is never proposed" : "not a regular file",
      });
      continue;
    }
    if (after.size > MAX_ARTIFACT_PROPOSAL_BYTES) {
      skipped.push({ path, reason: `over ${MAX_ARTIFACT_PROPOSAL_BYTES} bytes` });
      continue;
    }
    const bytes = await readFile(join(copyRoot, path)).catch(() => undefined);
    if (bytes === undefined || versionOf(bytes) !== after.hash) {
      skipped.push({ path, reason: "the child's copy changed after it finished" });
      continue;
    }
    // A file (or nothing) before: anything else was skipped above.
    const was = before !== null && isFile(before) ? before : null;
    const oldBytes = was === null ? null : (base(was.hash) ?? null);
    const common = {
      proposal_id: proposalIdFor(callId, path),
      call_id: callId,
      path,
      base_version: was === null ? null : was.hash,
      content_sha256: after.hash,
      // Cut as a tool result's is: what the journal holds of a diff is bounded, the content is whole.
      diff: clipDiff(fileDiff(path, oldBytes, bytes), RECORDED_DIFF_BYTES),
    };
    const text = bytes.byteLength <= MAX_INLINE_BYTES ? decoded(bytes) : undefined;
    if (text !== undefined) {
      proposals.push({ ...common, content: text });
      continue;
    }
    // Binary or large: the bytes go to this session's artifacts (written and fsynced before the
    // record naming them), checked against the digest the proposal binds.
    const stored = await artifacts.put(bytes);
    if (stored.sha256 !== after.hash) {
      skipped.push({ path, reason: "its content could not be stored as it was" });
      continue;
    }
    proposals.push({ ...common, content: "", content_artifact: stored.id });
  }
  return { proposals, skipped };
}

function decoded(bytes: Uint8Array): string | undefined {
  try {
    return strict.decode(bytes);
  } catch {
    return undefined;
  }
}
