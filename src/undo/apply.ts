import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { ArtifactStore } from "../artifacts/store.js";
import type { AnyNewEvent, AnyRecord, EventData } from "../journal/vocabulary.js";
import { FileLockTimeout, withFileLock } from "../workspace/file-lock.js";
import { RESERVED_DIR } from "../workspace/fs.js";
import { type Entry, isFile, isOversize, isSpecial, isUnread } from "../workspace/manifest.js";
import { currentEntry, putEntry, type TreeMode, TreePathError } from "./disk.js";
import {
  type PlanStep,
  planUndo,
  resolveTarget,
  sameOrAbsent as sameEntry,
  type UndoTarget,
  unfinishedUndo,
} from "./plan.js";
import { ReplayError, recordedBase } from "./replay.js";

type Change = EventData<"workspace.changed">;

export interface UndoInput {
  /** The workspace's real root. */
  root: string;
  /**
   * The session's journal, open for writing: its writer lock keeps the session's own runs out
   * (`harness undo`'s own writer, or a resuming engine's, which finishes an interrupted undo first).
   */
  writer: UndoJournal;
  artifacts: ArtifactStore;
  /** Content the workspace's recording kept outside the artifacts (its object store), checked against the hash. */
  kept?: (hash: string) => Uint8Array | undefined;
  /** Ignored when an earlier undo of this session was interrupted: that one is finished instead. */
  target: UndoTarget;
  dryRun: boolean;
}

/** What an undo needs of the session's journal: what it holds (read back when asked), and durable appends. */
export interface UndoJournal {
  readAll(): Promise<readonly AnyRecord[]>;
  append(events: AnyNewEvent[]): Promise<unknown>;
}

export type StepOutcome =
  | { path: string; outcome: "restored" | "already" }
  | { path: string; outcome: "conflict"; reason: string };

export interface UndoReport {
  /** The undo's id (its changes are journaled as call `undo:ID`); null for a dry run or nothing to do. */
  undo_id: string | null;
  /** The record whose state the workspace returns to. */
  target_seq: number;
  /** True when this finished an undo that an earlier, interrupted harness had started. */
  resumed: boolean;
  dry_run: boolean;
  plan: PlanStep[];
  outcomes: StepOutcome[];
}

/**
 * Undo a session's recorded workspace changes back to a point, journaled: `undo.started` with
 * the plan (durable before any file is touched), then file by file with compare-and-swap (a file
 * must still be exactly what the session left; one changed since is a conflict, reported and
 * left alone), then one `workspace.changed` (source "undo") and `undo.finished`.
 *
 * Idempotent per file: a file already holding its restore entry counts as done. So after a crash
 * mid-undo the next call finds the journaled plan without its `undo.finished` and finishes that
 * undo (and nothing else), exactly once.
 */
export async function runUndo(input: UndoInput): Promise<UndoReport> {
  const records = await input.writer.readAll();
  const pending = unfinishedUndo(records);
  const target_seq = pending ? pending.target.seq : resolveTarget(records, input.target);
  const plan = pending ? pending.plan : planUndo(records, target_seq);
  const mode = await treeMode(records, input.artifacts);
  const report = (undo_id: string | null, outcomes: StepOutcome[]): UndoReport => ({
    undo_id,
    target_seq,
    resumed: pending !== undefined,
    dry_run: input.dryRun,
    plan,
    outcomes,
  });
  if (input.dryRun) {
    const outcomes: StepOutcome[] = [];
    for (const step of plan) outcomes.push(await judge(input.root, step, mode));
    return report(pending?.undo_id ?? null, outcomes);
  }
  if (plan.length === 0) return report(null, []);
  const undo_id = pending?.undo_id ?? randomBytes(6).toString("hex");
  if (!pending) {
    await input.writer.append([
      { type: "undo.started", data: { undo_id, target: { seq: target_seq }, plan } },
    ]);
  }
  const change: Change = {
    call_id: `undo:${undo_id}`,
    source: "undo",
    created: [],
    modified: [],
    deleted: [],
  };
  const outcomes: StepOutcome[] = [];
  for (const step of plan) {
    const outcome = await restoreOne(input, step, mode);
    outcomes.push(outcome);
    // A file found already restored in a fresh undo was not changed by it; in a resumed one it
    // was (by the interrupted run, which stored its earlier content first).
    if (outcome.outcome === "restored" || (outcome.outcome === "already" && pending)) record(change, step);
  }
  const conflicts = outcomes.flatMap((o) =>
    o.outcome === "conflict" ? [{ path: o.path, reason: o.reason }] : [],
  );
  const restored = outcomes.length - conflicts.length;
  const changed = change.created.length + change.modified.length + change.deleted.length > 0;
  await input.writer.append([
    ...(changed ? [{ type: "workspace.changed" as const, data: change }] : []),
    { type: "undo.finished", data: { undo_id, restored, conflicts } },
  ]);
  return report(undo_id, outcomes);
}

/** What restoring this step would do now, without doing it. */
async function judge(root: string, step: PlanStep, mode: TreeMode): Promise<StepOutcome> {
  const refused = unrestorable(step);
  if (refused !== undefined) return { path: step.path, outcome: "conflict", reason: refused };
  try {
    const { entry } = await currentEntry(root, step.path, mode);
    if (sameEntry(entry, step.restore)) return { path: step.path, outcome: "already" };
    if (!sameEntry(entry, step.expect))
      return { path: step.path, outcome: "conflict", reason: conflictReason(step.expect, entry) };
    return { path: step.path, outcome: "restored" };
  } catch (error) {
    if (error instanceof TreePathError)
      return { path: step.path, outcome: "conflict", reason: error.message };
    throw error;
  }
}

async function restoreOne(input: UndoInput, step: PlanStep, mode: TreeMode): Promise<StepOutcome> {
  // The compare and the swap under the file's write lock, the one every harness file write takes:
  // another harness process writing this file cannot land between the undo's check and its rename.
  try {
    return await withFileLock(join(input.root, RESERVED_DIR, "locks"), step.path, () =>
      compareAndRestore(input, step, mode),
    );
  } catch (error) {
    if (error instanceof FileLockTimeout)
      return {
        path: step.path,
        outcome: "conflict",
        reason: "another harness process kept writing it; left alone",
      };
    throw error;
  }
}

async function compareAndRestore(input: UndoInput, step: PlanStep, mode: TreeMode): Promise<StepOutcome> {
  const conflict = (reason: string): StepOutcome => ({ path: step.path, outcome: "conflict", reason });
  const refused = unrestorable(step);
  if (refused !== undefined) return conflict(refused);
  try {
    const now = await currentEntry(input.root, step.path, mode);
    if (sameEntry(now.entry, step.restore)) return { path: step.path, outcome: "already" };
    if (!sameEntry(now.entry, step.expect)) return conflict(conflictReason(step.expect, now.entry));
    let bytes: Uint8Array | undefined;
    if (step.restore !== null && isFile(step.restore)) {
      bytes = (await input.artifacts.read(step.restore.hash)) ?? input.kept?.(step.restore.hash);
      if (bytes === undefined)
        return conflict("its earlier content is not in the session's artifacts; left alone");
    }
    // What the undo replaces is kept first, so the undo itself can be undone.
    if (now.bytes !== undefined) await input.artifacts.put(now.bytes);
    await putEntry(input.root, step.path, step.restore, mode, bytes);
    return { path: step.path, outcome: "restored" };
  } catch (error) {
    if (error instanceof TreePathError) return conflict(`${error.message}; left alone`);
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOTEMPTY" || code === "EEXIST")
      return conflict("a directory with entries the record does not hold; left alone");
    if (typeof code === "string") return conflict(`could not be restored (${code}); left alone`);
    throw error;
  }
}

/**
 * Whether the session records directories (its base says): an older session's undo leaves them
 * out as its record does, and removes the parents a delete left empty as it always did.
 */
async function treeMode(records: readonly AnyRecord[], artifacts: ArtifactStore): Promise<TreeMode> {
  try {
    return { directories: (await recordedBase(records, artifacts)).directories };
  } catch (error) {
    if (error instanceof ReplayError) return { directories: false };
    throw error;
  }
}

function record(change: Change, step: PlanStep): void {
  const { path, expect, restore } = step;
  if (expect === null && restore !== null) change.created.push({ path, after: restore });
  else if (expect !== null && restore === null) change.deleted.push({ path, before: expect });
  else if (expect !== null && restore !== null)
    change.modified.push({ path, before: expect, after: restore });
}

/**
 * Why a step cannot be undone when the record holds only the kind or size of one of its sides (a
 * FIFO, socket or device; a file over the size limit): content it never held cannot be put back,
 * and what it cannot compare is never deleted or replaced on trust.
 */
function unrestorable(step: PlanStep): string | undefined {
  if (step.restore !== null && isUnread(step.restore))
    return `it was ${describeUnread(step.restore)} before, which the record holds by ${isSpecial(step.restore) ? "kind" : "size"} only: it cannot be restored; left alone`;
  if (step.expect !== null && isUnread(step.expect))
    return `the session left ${describeUnread(step.expect)} here, which the record holds by ${isSpecial(step.expect) ? "kind" : "size"} only: the undo cannot tell it is still that, so it is not removed; left alone`;
  return undefined;
}

function describeUnread(entry: Entry): string {
  if (isSpecial(entry)) return `a ${entry.special.replace("_", " ")}`;
  return isOversize(entry) ? `a file of ${entry.size} bytes (over the size limit)` : "an entry";
}

function conflictReason(expect: Entry | null, now: Entry | null): string {
  if (expect === null) return "created since the session's last recorded change; left alone";
  if (now === null) return "deleted since the session's last recorded change; left alone";
  return "changed since the session's last recorded change; left alone";
}
