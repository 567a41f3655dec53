import type { ArtifactRef, ArtifactStore } from "../artifacts/store.js";
import type { EventData } from "../journal/vocabulary.js";
import type { ModelMessage } from "../protocol/types.js";
import type { ContextBudget } from "../providers/context-window.js";
import { projectForModel } from "../runtime/projection.js";
import type { ToolResult } from "../runtime/result.js";
import type { SessionState } from "./state.js";
import { basisTokens } from "./tokens.js";

/**
 * Pruning: when the next request would pass the threshold, the oldest tool results are replaced,
 * in this and every later request, by a placeholder naming the artifact that holds the whole
 * result. Nothing is lost (read_artifact brings a result back) and what is sent stays a function
 * of the journal: the `context.pruned` event says which results, and the state folds it.
 */

/** Share of (window - reply reserve) a request may reach before older results are pruned. */
export const PRUNE_THRESHOLD = 0.8;
/** Tool results at the end of the conversation that are always sent whole (besides the current step's). */
export const KEEP_RECENT_RESULTS = 2;

/**
 * Where pruning brings a request down to once it passed the threshold. Pruning rewrites earlier
 * messages, which ends the prefix a provider's cache can reuse; pruning well below the threshold
 * in one go, rather than one result per step just under it, leaves many steps in a row whose
 * requests each extend the previous one byte for byte.
 */
export const PRUNE_TARGET = 0.5;

export function pruneThreshold(budget: ContextBudget): number {
  return Math.floor((budget.window - budget.reserve) * PRUNE_THRESHOLD);
}

export function pruneTarget(budget: ContextBudget): number {
  return Math.floor((budget.window - budget.reserve) * PRUNE_TARGET);
}

/** What the model is sent instead of a pruned result. */
export function prunedPlaceholder(name: string, artifact: ArtifactRef): string {
  return (
    `[earlier ${name} result removed to save context: the whole result is artifact ${artifact.id} ` +
    `(${artifact.bytes} bytes); read it with read_artifact {"id":"${artifact.id}"} if it is needed again]`
  );
}

/**
 * Results that may be pruned, oldest first: not already pruned, not of the current step (the last
 * reply's calls), not among the most recent few, and never an outcome that is unknown (those
 * stay in front of the model until a person resolves them).
 */
export function pruneCandidates(state: SessionState): EventData<"tool.result">[] {
  const current = new Set(state.lastReply?.calls.map((call) => call.id) ?? []);
  const ordered = state.messages.flatMap((message) => {
    if (message.role !== "tool") return [];
    const result = state.results.get(message.call_id);
    return result === undefined ? [] : [result];
  });
  const older = ordered.slice(0, Math.max(0, ordered.length - KEEP_RECENT_RESULTS));
  return older.filter(
    (result) =>
      !current.has(result.call_id) && !state.pruned.has(result.call_id) && result.status !== "unknown",
  );
}

export interface PrunePlan {
  results: { call_id: string; artifact: ArtifactRef }[];
  /** The next request's estimate after the plan, in tokens. */
  tokensAfter: number;
}

/**
 * Choose the oldest candidates until the request's estimate is at or under `target` (or none are
 * left), storing each chosen result as an artifact first unless it already is one. Storing is
 * content-addressed and idempotent, so a plan interrupted before it is journaled is simply redone.
 */
export async function planPrune(input: {
  state: SessionState;
  /** UTF-8 bytes of the whole request as it stands. */
  requestBytes: number;
  target: number;
  artifacts: ArtifactStore;
}): Promise<PrunePlan | undefined> {
  const { state, target, artifacts } = input;
  const estimate = (bytes: number) => state.calibration.estimate(basisTokens(bytes));
  let bytes = input.requestBytes;
  const results: PrunePlan["results"] = [];
  for (const result of pruneCandidates(state)) {
    if (estimate(bytes) <= target) break;
    const message = state.messages.find((m) => m.role === "tool" && m.call_id === result.call_id);
    if (message === undefined) continue;
    const artifact =
      result.artifact ??
      (await artifacts.put(new TextEncoder().encode(projectForModel(result as ToolResult))));
    const replaced = { ...message, content: prunedPlaceholder(result.name, artifact) };
    bytes -= jsonBytes(message) - jsonBytes(replaced);
    results.push({ call_id: result.call_id, artifact });
  }
  return results.length === 0 ? undefined : { results, tokensAfter: estimate(bytes) };
}

export function jsonBytes(value: ModelMessage | unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}
