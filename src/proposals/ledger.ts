import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import { compareCodeUnits } from "../workspace/order.js";

export type RecordedProposal = EventData<"proposal.recorded">;
export type ApplyOutcome = EventData<"proposal.applied">;

/** A session's proposals as its journal tells them; nothing here looks at the workspace. */
export interface SessionProposals {
  /** The change set: the latest proposal per path, sorted by path. */
  current: RecordedProposal[];
  /** Every apply outcome recorded, oldest first. */
  outcomes: ApplyOutcome[];
  /** Ids of proposals whose content was written by an apply. */
  applied: ReadonlySet<string>;
}

/** Fold a session's records into its proposals. */
export function proposalsOf(records: readonly AnyRecord[]): SessionProposals {
  const latest = new Map<string, RecordedProposal>();
  const outcomes: ApplyOutcome[] = [];
  const applied = new Set<string>();
  for (const record of records) {
    if (record.type === "proposal.recorded") latest.set(record.data.path, record.data);
    if (record.type === "proposal.applied") {
      outcomes.push(record.data);
      if (record.data.outcome !== "conflict") applied.add(record.data.proposal_id);
    }
  }
  const current = [...latest.values()].sort((a, b) => compareCodeUnits(a.path, b.path));
  return { current, outcomes, applied };
}
