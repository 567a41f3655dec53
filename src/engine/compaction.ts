import { decodeStream, ProtocolError } from "../protocol/decoder.js";
import type { ModelMessage, Reply } from "../protocol/types.js";
import { ProviderError } from "../providers/provider.js";
import { sleep } from "../shared/sleep.js";
import { toWellFormed } from "../shared/unicode.js";
import { instructionsText } from "./instructions.js";
import { nextModelRetry } from "./model-retry.js";
import { reserveMoney, settleMoney } from "./money-budget.js";
import type { RunSummary } from "./options.js";
import { cancel, type EngineRun, stop } from "./outcome.js";
import { jsonBytes } from "./pruning.js";
import { activeSkillMessage } from "./skills.js";
import type { SessionState } from "./state.js";
import { basisTokens } from "./tokens.js";

/**
 * Compaction: when pruning is not enough, the older turns are replaced by a handoff summary the
 * model writes in one request sent without tools. What replaces them is rebuilt by the fold from
 * the journal: first the pinned set, verbatim, then the summary, then the turns kept whole.
 */

/** The first line of the request's last message: how a script (or a reader) knows it is one. */
export const COMPACTION_MARKER = "[harness: context compaction]";

export const COMPACTION_PROMPT = [
  COMPACTION_MARKER,
  "The conversation is about to exceed the context window. Write a handoff summary that lets you",
  "continue the task without the earlier messages. Do not call tools. Use these headings:",
  "Goal; Constraints and preferences; Progress; Decisions; Files read and changed (with the versions",
  "that matter); Next steps. The user's messages, the project instructions and any unresolved outcomes",
  "are kept verbatim and need not be repeated.",
].join("\n");

/** How many compactions one step may do before the run stops as over the window. */
export const MAX_COMPACTIONS_PER_STEP = 1;

/**
 * Where the kept turns begin: the current step's reply (its calls and their results are never
 * separated). Undefined unless at least one whole earlier turn (a reply and its results) would
 * be replaced: summarizing only the pinned messages cannot make a request smaller.
 */
export function compactionCut(state: SessionState): number | undefined {
  const replies = state.messages.flatMap((m, i) => (m.role === "assistant" ? [i] : []));
  return replies.length >= 2 ? replies.at(-1) : undefined;
}

/**
 * Sent verbatim before every summary: what the person said (the goal, every later turn's input
 * and every delivered steer, in order), every nested instructions file loaded so far (the start
 * ones are in the system message) and every call whose outcome is still unknown. `kept` holds
 * the messages that follow, so an input or unknown result already among them is not doubled.
 */
export function pinnedMessages(state: SessionState, kept: readonly ModelMessage[]): ModelMessage[] {
  const keptMessages = new Set(kept);
  const said = state.userMessages.filter((message) => !keptMessages.has(message));
  // The same message objects, so a later compaction recognizes them among the kept turns.
  const pinned: ModelMessage[] =
    state.userMessages.length > 0 ? said : [{ role: "user", content: state.goal ?? "" }];
  for (const file of state.nestedInstructions) pinned.push({ role: "user", content: instructionsText(file) });
  const keptCalls = new Set(kept.flatMap((m) => (m.role === "tool" ? [m.call_id] : [])));
  // Active skills stay in force: their text is pinned unless their result is still among the kept.
  for (const skill of state.activeSkills)
    if (!keptCalls.has(skill.call_id)) pinned.push(activeSkillMessage(skill));
  const keptIds = new Set(kept.flatMap((m) => (m.role === "tool" ? [m.call_id] : [])));
  for (const result of state.unresolvedUnknowns()) {
    if (keptIds.has(result.call_id)) continue;
    const call = state.history.find((h) => h.call_id === result.call_id);
    pinned.push({
      role: "user",
      content:
        `[Unresolved: the outcome of call ${result.call_id} (${result.name} ${JSON.stringify(call?.arguments ?? {})}) ` +
        `is unknown: ${result.summary}]`,
    });
  }
  return pinned;
}

export function summaryMessage(summary: string): ModelMessage {
  return { role: "user", content: `[Summary of the earlier conversation]\n${summary}` };
}

/** What a compaction needs from the model step: the system message and the request sizes. */
export interface CompactionInput {
  run: EngineRun;
  step: number;
  system: string;
  /** UTF-8 bytes of the next ordinary request as it stands, and the tool specs' share of them. */
  requestBytes: number;
  specBytes: number;
  /** The user's own ask (harness compact --instructions), appended to the prompt and journaled. */
  instructions?: string;
}

export type CompactionOutcome =
  | { kind: "compacted"; replaced_messages: number; tokens_before: number; tokens_after: number }
  | { kind: "impossible"; why: string }
  | { kind: "failed"; summary: RunSummary };

/**
 * One compaction: journal the request (model.started, purpose "compaction"), send it without
 * tools, and journal the summary as context.compacted. A request that would not fit is never
 * sent. A retryable provider failure is journaled (model.retryable_error) and the request sent
 * again after the same backoff, within the same attempt and wait budgets, as an ordinary
 * request; a final failure or a reply without summary text is journaled (model.failed) and
 * stops the run as context_exhausted. Interrupted before context.compacted, it is simply redone
 * on resume.
 */
export async function compactHistory(input: CompactionInput): Promise<CompactionOutcome> {
  const { run, step, system } = input;
  const state = run.state;
  const cut = compactionCut(state);
  if (cut === undefined)
    return { kind: "impossible", why: "there is nothing older than the current step to summarize" };
  const estimate = (bytes: number) => state.calibration.estimate(basisTokens(bytes));
  const ask = input.instructions === undefined ? "" : `\n${toWellFormed(input.instructions)}`;
  const prompt: ModelMessage = { role: "user", content: `${COMPACTION_PROMPT}${ask}` };
  const bytes = input.requestBytes - input.specBytes + jsonBytes(prompt) + 1;
  const tokens = {
    basis_tokens: basisTokens(bytes),
    estimated_input_tokens: estimate(bytes),
    context_window: run.budget.window,
    reply_reserve: run.budget.reserve,
  };
  if (tokens.estimated_input_tokens > run.budget.window - run.budget.reserve) {
    return {
      kind: "impossible",
      why: `the request asking for a summary would itself be about ${tokens.estimated_input_tokens} tokens`,
    };
  }
  for (;;) {
    const attempt = state.retriesSinceReply;
    // A summary request is a model request: a money budget counts it like any other.
    const refused = await reserveMoney(run, {
      step,
      attempt,
      inputTokens: tokens.estimated_input_tokens,
      replyTokens: tokens.reply_reserve,
    });
    if (refused) return { kind: "failed", summary: refused };
    await run.record({
      type: "model.started",
      data: {
        step,
        attempt,
        tools_digest: run.offered().digest,
        ...tokens,
        purpose: "compaction",
        ...(input.instructions !== undefined ? { instructions: toWellFormed(input.instructions) } : {}),
      },
    });
    const stream = run.options.provider.stream(
      {
        messages: [{ role: "system", content: system }, ...state.messages, prompt],
        tools: [],
        step,
        attempt,
        ordinal: state.ordinal,
        purpose: "compaction",
      },
      run.signal,
    );
    const decoded = await decodeStream(stream);
    await settleMoney(run, { step, attempt, usage: "reply" in decoded ? decoded.reply.usage : undefined });
    if ("reply" in decoded && decoded.reply.text.trim() !== "")
      return recordSummary(input, cut, attempt, decoded.reply);
    // Interrupted: not a failure of the model, and nothing to retry.
    if (run.signal.aborted) return { kind: "failed", summary: await cancel(run) };
    const error = "reply" in decoded ? undefined : decoded.error;
    const failure = providerFailure(error);
    const decision = failure === undefined ? undefined : nextModelRetry(run, failure);
    const retry = decision?.retry ? decision.delayMs : undefined;
    if (failure !== undefined && retry !== undefined) {
      // Retried like an ordinary request, within the same step's attempt and wait budgets.
      await run.record({
        type: "model.retryable_error",
        data: {
          step,
          attempt,
          code: failure.code,
          message: toWellFormed(failure.message),
          retry_in_ms: retry,
          ...failureDetails(failure),
        },
      });
      await (run.options.sleep ?? sleep)(retry, run.signal);
      if (run.signal.aborted) return { kind: "failed", summary: await cancel(run) };
      if (state.turnModelRequests >= run.limits.maxModelRequests) {
        const message = `the model-request budget (${run.limits.maxModelRequests}) is used up`;
        return { kind: "failed", summary: await stop(run, "stopped", "budget_exhausted", message) };
      }
      continue;
    }
    const why =
      error === undefined
        ? "the compaction reply had no summary text"
        : failure === undefined
          ? `the compaction reply was malformed: ${error instanceof Error ? error.message : "unreadable"}`
          : `the compaction request failed${failure.retryable ? ` (gave up after ${attempt + 1} attempts)` : ""}: ` +
            `${failure.code}: ${failure.message}`;
    const message = toWellFormed(
      `${why}; the context could not be made small enough for the next request ` +
        "(resume the session to try again, or give it a larger --context-window if the model has one)",
    );
    await run.record({
      type: "model.failed",
      data: {
        step,
        attempt,
        code: failure?.code ?? "COMPACTION_FAILED",
        message,
        ...(failure !== undefined ? failureDetails(failure) : {}),
      },
    });
    return { kind: "failed", summary: await stop(run, "stopped", "context_exhausted", message) };
  }
}

/** Journal the summary as context.compacted, with what it replaces and the sizes before and after. */
async function recordSummary(
  input: CompactionInput,
  cut: number,
  attempt: number,
  reply: Reply,
): Promise<CompactionOutcome> {
  const { run, step } = input;
  const state = run.state;
  const estimate = (bytes: number) => state.calibration.estimate(basisTokens(bytes));
  const summary = reply.text;
  const kept = state.messages.slice(cut);
  const after = [...pinnedMessages(state, kept), summaryMessage(summary), ...kept];
  const afterBytes =
    input.requestBytes - state.messageBytes + after.reduce((n, m) => n + jsonBytes(m) + 1, 0);
  const sizes = {
    replaced_messages: cut,
    tokens_before: estimate(input.requestBytes),
    tokens_after: estimate(afterBytes),
  };
  await run.record({
    type: "context.compacted",
    data: {
      step,
      attempt,
      summary,
      ...sizes,
      ...(reply.usage ? { usage: reply.usage } : {}),
    },
  });
  return { kind: "compacted", ...sizes };
}

/**
 * A failed stream's error as the provider error it is, or a transport failure (as model steps
 * treat it); a malformed reply (protocol error) is no provider failure and is never retried.
 */
function providerFailure(error: unknown): ProviderError | undefined {
  if (error === undefined || error instanceof ProtocolError) return undefined;
  if (error instanceof ProviderError) return error;
  return new ProviderError("TRANSPORT", "the model stream failed");
}

function failureDetails(failure: ProviderError) {
  return {
    ...(failure.status !== undefined ? { status: failure.status } : {}),
    ...(failure.requestId !== undefined ? { request_id: failure.requestId } : {}),
  };
}
