import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { EventData } from "../../journal/vocabulary.js";
import { proposalIdFor } from "../../proposals/overlay.js";
import { fileDiff } from "../../shared/unified-diff.js";
import { isFile } from "../../workspace/manifest.js";
import { versionOf } from "../../workspace/version.js";
import type { ChildChange } from "./child-changes.js";

/** Larger files are listed, not proposed: a proposal holds its whole content in the journal. */
const MAX_PROPOSAL_BYTES = 1024 * 1024;
const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * A `merge: propose` child's changes as the parent's proposals, exactly as propose mode records
 * them: each created or modified text file's new content bound to the version its base had, so
 * `harness diff` shows them and `harness apply` writes each one only if the file is still that
 * version. Deletions, links, binary and very large files cannot be proposed: they are listed in
 * the result and left out (`skipped`).
 */
export async function childProposals(
  callId: string,
  copyRoot: string,
  changes: readonly ChildChange[],
  base: (hash: string) => Uint8Array | undefined,
): Promise<{ proposals: EventData<"proposal.recorded">[]; skipped: { path: string; reason: string }[] }> {
  const proposals: EventData<"proposal.recorded">[] = [];
  const skipped: { path: string; reason: string }[] = [];
  for (const change of changes) {
    const { path, before, after } = change;
    if (after === null || !isFile(after)) {
      if (after !== null || (before !== null && isFile(before)))
        skipped.push({
          path,
          reason: after === null ? "a deletion cannot be proposed" : "not a regular file",
        });
      continue;
    }
    if (before !== null && !isFile(before)) {
      skipped.push({ path, reason: "it replaced something that is not a regular file" });
      continue;
    }
    if (after.size > MAX_PROPOSAL_BYTES) {
      skipped.push({ path, reason: `over ${MAX_PROPOSAL_BYTES} bytes` });
      continue;
    }
    const bytes = await readFile(join(copyRoot, path)).catch(() => undefined);
    if (bytes === undefined || versionOf(bytes) !== after.hash) {
      skipped.push({ path, reason: "the child's copy changed after it finished" });
      continue;
    }
    let content: string;
    try {
      content = strict.decode(bytes);
    } catch {
      skipped.push({ path, reason: "not UTF-8 text" });
      continue;
    }
    proposals.push({
      proposal_id: proposalIdFor(callId, path),
      call_id: callId,
      path,
      base_version: before === null ? null : before.hash,
      content,
      content_sha256: after.hash,
      diff: fileDiff(path, before === null ? null : (base(before.hash) ?? null), bytes),
    });
  }
  return { proposals, skipped };
}
