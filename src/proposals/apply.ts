import { quote } from "../workspace/boundary.js";
import { WorkspaceError, type WorkspaceFs } from "../workspace/fs.js";
import { versionOf } from "../workspace/version.js";
import type { ApplyOutcome, RecordedProposal, SessionProposals } from "./ledger.js";

export interface ApplyInput {
  /** The real workspace. */
  fs: WorkspaceFs;
  proposals: SessionProposals;
  /** Make one outcome durable; called before the next proposal is tried. */
  record(outcome: ApplyOutcome): Promise<void>;
  /**
   * Delete `path` only if its content is still `version` (compare-and-swap at commit time):
   * undefined once deleted, else why it was left alone. Without it a deletion is a conflict.
   */
  remove?(path: string, version: string): Promise<string | undefined>;
  /** A proposal's content kept as an artifact of the session (`content_artifact`). */
  artifact?(id: string): Promise<Uint8Array | undefined>;
}

/**
 * Apply a session's change set (the latest proposal per file) to the workspace.
 *
 * Each file is written only if it is still exactly the version the proposal was based on (a new
 * file: still absent), and the check is repeated at commit time by `writeFileAtomic`'s
 * expectedVersion, so a change made meanwhile is never overwritten: that file is reported as a
 * conflict and left alone. Files are independent: one conflict does not stop the others (there
 * is no multi-file transaction; the outcome of every file is journaled).
 *
 * Idempotent by proposal id: a proposal the journal records as applied is skipped
 * (already_applied). A file that already holds exactly the proposed content also counts as
 * already applied: that is what an apply interrupted between its write and its journal record
 * leaves behind, and writing it again would change nothing.
 */
export async function applyProposals(input: ApplyInput): Promise<ApplyOutcome[]> {
  const outcomes: ApplyOutcome[] = [];
  for (const proposal of input.proposals.current) {
    const outcome = await applyOne(input, proposal, input.proposals.applied.has(proposal.proposal_id));
    await input.record(outcome);
    outcomes.push(outcome);
  }
  return outcomes;
}

async function applyOne(
  input: ApplyInput,
  proposal: RecordedProposal,
  recordedApplied: boolean,
): Promise<ApplyOutcome> {
  const { fs } = input;
  const { proposal_id, path } = proposal;
  const result = (
    outcome: ApplyOutcome["outcome"],
    current: string | null,
    message: string,
  ): ApplyOutcome => ({
    proposal_id,
    path,
    outcome,
    current_version: current,
    message,
  });
  let current: string | null;
  try {
    // Applied where the proposal names, never through a link made since (even one inside the
    // workspace): the file read, compared and written is the one at that path.
    if ((await fs.resolve(path)) !== path)
      return result("conflict", null, `${quote(path)} leads through a symbolic link now; left alone`);
    current = await currentVersion(fs, path);
  } catch (error) {
    if (error instanceof WorkspaceError) return result("conflict", null, `${error.message}; left alone`);
    throw error;
  }
  if (proposal.deleted === true) return deleteOne(input, proposal, current, recordedApplied, result);
  if (recordedApplied) {
    const since = current === proposal.content_sha256 ? "" : " (the file has changed since)";
    return result("already_applied", current, `already applied by an earlier harness apply${since}`);
  }
  let bytes: Uint8Array;
  if (proposal.content_artifact !== undefined) {
    const stored = await input.artifact?.(proposal.content_artifact).catch(() => undefined);
    if (stored === undefined)
      return result(
        "conflict",
        current,
        "the proposed content's artifact is missing or damaged; nothing was written",
      );
    bytes = stored;
  } else bytes = new TextEncoder().encode(proposal.content);
  if (versionOf(bytes) !== proposal.content_sha256) {
    return result("conflict", current, "the recorded content does not match its digest; nothing was written");
  }
  if (current === proposal.content_sha256 && current !== proposal.base_version) {
    return result("already_applied", current, `${quote(path)} already has the proposed content`);
  }
  if (current !== proposal.base_version)
    return result("conflict", current, conflictMessage(proposal, current));
  try {
    await fs.writeFileAtomic(path, bytes, { expectedVersion: proposal.base_version });
  } catch (error) {
    if (!(error instanceof WorkspaceError)) throw error;
    const now = await currentVersion(fs, path).catch(() => null);
    const why =
      error.code === "STALE_VERSION" ? `${quote(path)} changed while it was being applied` : error.message;
    return result("conflict", now, `${why}; left alone`);
  }
  return result("applied", proposal.content_sha256, `applied to ${quote(path)}`);
}

/**
 * A deletion: the file is removed only if it still has the version the proposal was based on,
 * checked again at commit time (`remove`); a file already gone counts as applied.
 */
async function deleteOne(
  input: ApplyInput,
  proposal: RecordedProposal,
  current: string | null,
  recordedApplied: boolean,
  result: (outcome: ApplyOutcome["outcome"], current: string | null, message: string) => ApplyOutcome,
): Promise<ApplyOutcome> {
  const path = quote(proposal.path);
  if (recordedApplied) {
    const since = current === null ? "" : " (the file exists again)";
    return result("already_applied", current, `already deleted by an earlier harness apply${since}`);
  }
  if (current === null) return result("already_applied", null, `${path} is already gone`);
  if (proposal.base_version === null || current !== proposal.base_version)
    return result("conflict", current, conflictMessage(proposal, current));
  const protection = input.fs.protectedPaths.protectionOf(proposal.path.split("/"));
  if (protection !== undefined)
    return result("conflict", current, `${path} is protected: ${protection.reason}; left alone`);
  if (input.remove === undefined)
    return result("conflict", current, "this apply cannot delete files; left alone");
  const refused = await input.remove(proposal.path, proposal.base_version);
  if (refused !== undefined) {
    const now = await currentVersion(input.fs, proposal.path).catch(() => null);
    return result("conflict", now, refused);
  }
  return result("applied", null, `deleted ${path}`);
}

/** The file's version now, or null when it does not exist. */
async function currentVersion(fs: WorkspaceFs, path: string): Promise<string | null> {
  const stat = await fs.stat(path);
  if (stat === undefined) return null;
  if (stat.kind !== "file")
    throw new WorkspaceError("IS_DIRECTORY", path, `${quote(path)} is no longer a file`);
  return versionOf(await fs.readFile(path));
}

function conflictMessage(proposal: RecordedProposal, current: string | null): string {
  const path = quote(proposal.path);
  if (proposal.base_version === null) return `${path} was created after the proposal was made; left alone`;
  if (proposal.deleted === true)
    return `${path} changed after the deletion was proposed (based on ${short(proposal.base_version)}, now ${current === null ? "gone" : short(current)}); left alone`;
  if (current === null) return `${path} was deleted after the proposal was made; nothing was written`;
  return (
    `${path} changed after the proposal was made (based on ${short(proposal.base_version)}, ` +
    `now ${short(current)}); left alone`
  );
}

export function short(version: string): string {
  return version.slice(0, 12);
}
