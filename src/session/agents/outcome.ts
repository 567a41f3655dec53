import type { RunSummary } from "../../engine/options.js";
import type { AGENT_OUTCOMES, EventData } from "../../journal/vocabulary.js";
import type { JsonObject } from "../../shared/json.js";
import type { ToolOutput } from "../../tools/tool.js";

export type AgentOutcome = (typeof AGENT_OUTCOMES)[number];

/**
 * How a child ended, from its run's summary and what stopped it: an exhausted budget (its own
 * request or call budget, or the tokens, money or wall time the delegation watched), a
 * cancellation from above, a failure to run at all, or the host's acceptance verdict.
 */
export function agentOutcome(
  summary: RunSummary | undefined,
  seen: { cancelled: boolean; exhausted: boolean; failed: boolean },
): AgentOutcome {
  if (seen.exhausted) return "budget_exhausted";
  if (seen.cancelled) return "cancelled";
  if (summary === undefined || seen.failed) return "failed";
  switch (summary.status) {
    case "verified":
      return "verified";
    case "unverified":
      return "unverified";
    case "cancelled":
    case "interrupted":
      return "cancelled";
    case "review_required":
    case "needs_review":
      return "review_required";
    case "stopped":
      return summary.reason === "budget_exhausted" ? "budget_exhausted" : "failed";
  }
}

/**
 * The `agent` call's result: what the parent model reads (the outcome first, then the child's
 * final text, its changes and conflicts, usage and the journal head), and the same facts as data.
 */
export function resultOf(
  finished: EventData<"agent.finished">,
  started: EventData<"agent.started"> | undefined,
  notes: readonly string[],
  answer: string | null = null,
): ToolOutput {
  const { outcome, usage, changes, conflicts } = finished;
  const lines = [
    `agent ${finished.child_session}: ${outcome}`,
    ...notes,
    ...(answer ? ["final text:", answer] : []),
    changes.length === 0
      ? "changes: none"
      : `changes (${changes.filter((c) => c.applied).length} applied, ${changes.filter((c) => !c.applied).length} proposed):`,
    ...changes.map(
      (c) =>
        `  ${c.applied ? "applied " : "proposed"} ${c.path} ${short(c.base_version)} -> ${short(c.new_version)} (+${c.added} -${c.removed})`,
    ),
    ...(conflicts.length > 0
      ? ["conflicts (left alone):", ...conflicts.map((c) => `  ${c.path}: ${c.reason}`)]
      : []),
    `usage: ${usage.model_requests} model requests, ${usage.tool_calls} tool calls, ${usage.input_tokens} input / ${usage.output_tokens} output tokens`,
    ...(finished.survivors > 0
      ? [`${finished.survivors} process(es) of the child were still alive and were killed`]
      : []),
    `journal head: ${finished.head_hash ?? "none"}`,
    "The child's outcome is its own claim unless verified by acceptance commands: check its changes before relying on them.",
  ];
  return {
    summary: `agent ${finished.child_session}: ${outcome}, ${changes.length} change(s)${conflicts.length > 0 ? `, ${conflicts.length} conflict(s)` : ""}`,
    content: lines.join("\n"),
    // Plain JSON (optional fields dropped), as the journal keeps a result's data.
    data: JSON.parse(
      JSON.stringify({
        outcome,
        child_session: finished.child_session,
        head_hash: finished.head_hash,
        answer,
        usage,
        changes,
        conflicts,
        survivors: finished.survivors,
        ...(started ? { depth: started.depth, grant: started.grant } : {}),
        not_granted: notes.filter((n) => n.startsWith("not granted: ")).map((n) => n.slice(13)),
      }),
    ) as JsonObject,
  };
}

function short(version: string | null): string {
  return version === null ? "(absent)" : version.slice(0, 12);
}
