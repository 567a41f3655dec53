import type { SessionState } from "../engine/state.js";

/** A session's status as a short label: its last outcome, or in progress / interrupted. */
export function statusOf(state: SessionState): string {
  const outcome = state.outcome;
  if (!outcome) return "interrupted";
  switch (outcome.kind) {
    case "finished":
      return outcome.data.status;
    case "stopped":
      return outcome.data.status === "stopped" ? `stopped (${outcome.data.reason})` : outcome.data.status;
    case "cancelled":
      return "cancelled";
    case "interrupted":
      return `turn ${outcome.data.turn} interrupted (open for the next input)`;
  }
}
