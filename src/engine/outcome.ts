import type { AnyNewEvent, AnyRecord, EventData } from "../journal/vocabulary.js";
import type { ContextBudget } from "../providers/context-window.js";
import type { ToolSnapshot } from "../runtime/registry.js";
import type { CatalogPort, SubCallPort } from "../tools/tool.js";
import type { EngineOptions, Limits, RunSummary } from "./options.js";
import type { SessionState } from "./state.js";

/** What every step of an engine run works with: its options, the session as journaled, and the journal. */
export interface EngineRun {
  readonly options: EngineOptions;
  readonly limits: Limits;
  /** The context window requests must fit, and the reserve kept for the reply. */
  readonly budget: ContextBudget;
  readonly systemPrompt: string;
  readonly signal: AbortSignal;
  readonly state: SessionState;
  /** The session's tools (the surface), replaced when the surface changes at a step boundary. */
  tools(): ToolSnapshot;
  /**
   * What the model is offered now: the surface whole, or with tools deferred the always-loaded
   * prefix, `tool_search` and the tools loaded so far (tool-offer.ts).
   */
  offered(): ToolSnapshot;
  /** What `tool_search` searches and loads from, while tools are deferred. */
  catalog(): CatalogPort | undefined;
  /** Append events durably, then apply them to the state and show them to the listener. */
  record(...events: AnyNewEvent[]): Promise<void>;
  /** Whether the signal fired because the user interrupted the turn (not because harness is exiting). */
  interrupted(): boolean;
  /**
   * Every record of the session, read back from the journal (the run holds its fold, not its
   * records): for what the fold keeps only in summary, e.g. confirming a reused call id.
   */
  records?(): Promise<readonly AnyRecord[]>;
  /** Append events that may wait for the next durable append; applied to the state at once. */
  defer(...events: AnyNewEvent[]): Promise<void>;
  /**
   * Nested calls of the recorded call `parent` (a `batch` run again after a crash), through
   * the pipeline, with ids `PREFIX/N`.
   */
  nestedCalls?(parent: EventData<"tool.started">, prefix: string): SubCallPort;
}

/** The run ends short of success (stopped, review required, needs review): journaled, then summarized. */
export async function stop(
  run: EngineRun,
  status: "stopped" | "review_required" | "needs_review",
  reason: string,
  message: string,
  allow?: string[][],
) {
  await run.record({
    type: "run.stopped",
    data: { status, reason, message, ...(allow !== undefined ? { allow } : {}) },
  });
  return summary(run);
}

/**
 * The run was stopped at a safe point: by a signal (the process is exiting: `run.cancelled`) or by
 * the user interrupting the turn (`turn.interrupted`: the session waits for the next input).
 */
export async function cancel(run: EngineRun): Promise<RunSummary> {
  if (run.interrupted()) {
    await run.record({
      type: "turn.interrupted",
      data: { turn: Math.max(run.state.turn, 1), reason: "interrupted by the user" },
    });
  } else {
    await run.record({ type: "run.cancelled", data: { reason: "interrupted by signal" } });
  }
  return summary(run);
}

/** The run's summary, from the outcome the journal holds (incomplete when it holds none). */
export function summary(run: EngineRun): RunSummary {
  const state = run.state;
  const outcome = state.outcome;
  const base = {
    session: run.options.sessionId,
    events: state.records,
    model_requests: state.modelRequests,
    tool_calls: state.toolCalls,
    usage: state.usage,
    ...(state.agents.size > 0 ? { agents_usage: { ...state.agentUsage } } : {}),
    ...(state.turnAttempts.length > 0 ? { attempts: state.turnAttempts.length } : {}),
    tokens: {
      context_window: run.budget.window,
      peak_estimated_input_tokens: state.peakEstimatedInputTokens,
      peak_reported_input_tokens: state.peakReportedInputTokens,
    },
  };
  if (!outcome) return { ...base, status: "stopped", reason: "incomplete", message: null, answer: null };
  switch (outcome.kind) {
    case "finished":
      return {
        ...base,
        status: outcome.data.status,
        reason: null,
        message: null,
        answer: outcome.data.answer,
      };
    case "stopped":
      return {
        ...base,
        status: outcome.data.status,
        reason: outcome.data.reason,
        message: outcome.data.message,
        answer: null,
        ...(outcome.data.allow !== undefined ? { allow: outcome.data.allow } : {}),
      };
    case "cancelled":
      return {
        ...base,
        status: "cancelled",
        reason: "cancelled",
        message: outcome.data.reason,
        answer: null,
      };
    case "interrupted":
      return {
        ...base,
        status: "interrupted",
        reason: "interrupted",
        message: outcome.data.reason,
        answer: null,
      };
  }
}
