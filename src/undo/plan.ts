import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import { CodedError } from "../shared/coded-error.js";
import { type Entry, sameEntry } from "../workspace/manifest.js";
import { netChanges } from "./history.js";

/** One file of an undo: the entry it must still have (null: absent), and the one it gets back (null: delete it). */
export type PlanStep = EventData<"undo.started">["plan"][number];

/** Where an undo returns the workspace to: `seq`, the record after which its state is restored. */
export type UndoTarget =
  | { kind: "last-turn" }
  | { kind: "turn"; turn: number }
  | { kind: "seq"; seq: number }
  | { kind: "call"; callId: string };

export class UndoTargetError extends CodedError<"NO_SUCH_POINT"> {
  override readonly name = "UndoTargetError";
}

/**
 * The record an undo returns to: the workspace gets back its state right after that record.
 * A call (`--to CALL_ID`, or `undo:ID` for an earlier undo) and a turn are undone whole: the
 * point is the record just before the call's first record or the turn's input.
 */
export function resolveTarget(records: readonly AnyRecord[], target: UndoTarget): number {
  const last = records.length - 1;
  switch (target.kind) {
    case "seq":
      if (target.seq < 0 || target.seq > last)
        throw new UndoTargetError(
          "NO_SUCH_POINT",
          `--seq must name a record from 0 to ${last}; got ${target.seq}`,
        );
      return target.seq;
    case "turn":
    case "last-turn": {
      const inputs = records.filter((r) => r.type === "user.input");
      const index = target.kind === "turn" ? target.turn - 1 : inputs.length - 1;
      const input = inputs[index];
      if (input === undefined)
        throw new UndoTargetError(
          "NO_SUCH_POINT",
          inputs.length === 0 ? "the session has no turns yet" : `--turn must be from 1 to ${inputs.length}`,
        );
      return input.seq - 1;
    }
    case "call": {
      const undoId = target.callId.startsWith("undo:") ? target.callId.slice("undo:".length) : undefined;
      const first = records.find(
        (r) =>
          (r.type === "tool.started" && r.data.call_id === target.callId) ||
          (r.type === "workspace.changed" && r.data.call_id === target.callId) ||
          (r.type === "undo.started" && r.data.undo_id === undoId),
      );
      if (first === undefined)
        throw new UndoTargetError(
          "NO_SUCH_POINT",
          `no call "${target.callId}" in this session (harness inspect lists the calls; an undo is undo:ID)`,
        );
      return first.seq - 1;
    }
  }
}

/**
 * Undo every recorded workspace change after record `seq`. Folded per path, oldest to newest:
 * the file must now hold what the newest change left (`expect`) and gets back what it held
 * before the oldest (`restore`). Paths where the two are the same (created then deleted, changed
 * and changed back) need nothing. Sorted so deletions come first (a directory the session turned
 * into a file or a link is cleared before anything is written below its name), deepest path first
 * (a directory's entries are gone before it is removed), then the rest by path (a directory is
 * made before anything below it).
 */
export function planUndo(records: readonly AnyRecord[], seq: number): PlanStep[] {
  const steps: PlanStep[] = netChanges(records, seq).map(({ path, before, after }) => ({
    path,
    expect: after,
    restore: before,
  }));
  return steps.sort((a, b) => {
    const order = Number(a.restore !== null) - Number(b.restore !== null);
    if (order !== 0) return order;
    const byPath = a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
    return a.restore === null ? -byPath : byPath;
  });
}

/** An undo whose plan was journaled but that never finished (harness was killed mid-way). */
export function unfinishedUndo(records: readonly AnyRecord[]): EventData<"undo.started"> | undefined {
  let open: EventData<"undo.started"> | undefined;
  for (const record of records) {
    if (record.type === "undo.started") open = record.data;
    else if (record.type === "undo.finished" && open?.undo_id === record.data.undo_id) open = undefined;
  }
  return open;
}

/** Two entries of a plan (null: nothing at the path) are the same. */
export function sameOrAbsent(a: Entry | null, b: Entry | null): boolean {
  return sameEntry(a ?? undefined, b ?? undefined);
}
