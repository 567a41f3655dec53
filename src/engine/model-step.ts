import type { ArtifactStore } from "../artifacts/store.js";
import { JournalError } from "../journal/store.js";
import { decodeStream, ProtocolError, replyEvidence, type StreamEvidence } from "../protocol/decoder.js";
import type { ModelMessage, Reply } from "../protocol/types.js";
import { ProviderError } from "../providers/provider.js";
import type { ToolSnapshot } from "../runtime/registry.js";
import { sleep } from "../shared/sleep.js";
import { toWellFormed } from "../shared/unicode.js";
import { promptCacheKey } from "./cache-key.js";
import { callIdsIn } from "./call-ids.js";
import { type CompactionOutcome, compactHistory, MAX_COMPACTIONS_PER_STEP } from "./compaction.js";
import { systemText } from "./instructions.js";
import { nextModelRetry } from "./model-retry.js";
import { reserveMoney, settleMoney } from "./money-budget.js";
import type { RunSummary } from "./options.js";
import { cancel, type EngineRun, stop } from "./outcome.js";
import { generalProviderAdvice } from "./provider-advice.js";
import { planPrune, pruneTarget, pruneThreshold } from "./pruning.js";
import { basisTokens } from "./tokens.js";

/**
 * Model steps of a run: build the request (never one over the context window), stream and decode the
 * reply completely, retry retryable provider failures within their budget, and journal the
 * reply before any of its calls can run.
 */
export class ModelStep {
  constructor(private readonly run: EngineRun) {}

  /** One model step: request, decode completely, record. Returns a summary when the run ends. */
  async next(): Promise<RunSummary | undefined> {
    for (;;) {
      const attempt = this.run.state.retriesSinceReply;
      if (this.run.signal.aborted) return cancel(this.run);
      if (this.budgetSpent()) return this.stopForBudget();
      const step = this.run.state.replyCount;
      await this.pruneIfNeeded(step);
      const compaction = await this.compactIfNeeded(step);
      if (compaction?.kind === "failed") return compaction.summary;
      // The summary request counted: the request it made room for must fit the budget too.
      if (this.budgetSpent()) return this.stopForBudget();
      const messages: ModelMessage[] = [
        { role: "system", content: this.systemMessage() },
        ...this.run.state.messages,
      ];
      const tokens = this.estimate();
      if (tokens.estimated_input_tokens > tokens.context_window - tokens.reply_reserve) {
        const why =
          compaction?.kind === "impossible"
            ? ` (pruning was not enough and it could not be compacted: ${compaction.why})`
            : (this.run.state.compactionsByStep.get(step) ?? 0) > 0
              ? " even after pruning and compaction"
              : "";
        return stop(
          this.run,
          "stopped",
          "context_exhausted",
          `the next request would be about ${tokens.estimated_input_tokens} tokens, over the ${tokens.context_window}-token ` +
            `context window minus ${tokens.reply_reserve} reserved for the reply${why}; it was not sent ` +
            "(a larger --context-window, if the model has one, or a new session with a narrower goal)",
        );
      }
      const refused = await reserveMoney(this.run, {
        step,
        attempt,
        inputTokens: tokens.estimated_input_tokens,
        replyTokens: tokens.reply_reserve,
      });
      if (refused) return refused;
      await this.run.record({
        type: "model.started",
        data: { step, attempt, tools_digest: this.run.offered().digest, ...tokens },
      });
      const images = await imageBytes(messages, this.run.options.runtime.artifacts);
      const stream = this.run.options.provider.stream(
        {
          messages,
          ...(images.size > 0 ? { images } : {}),
          tools: this.run.offered().specs,
          step,
          attempt,
          ordinal: this.run.state.ordinal,
          cacheKey: promptCacheKey(this.run.state.header),
        },
        this.run.signal,
      );
      const decoded = await decodeStream(stream, (event) => this.run.options.listener?.stream?.(event));
      await settleMoney(this.run, {
        step,
        attempt,
        usage: "reply" in decoded ? decoded.reply.usage : undefined,
      });
      if (this.run.signal.aborted) return cancel(this.run);
      if ("reply" in decoded) {
        const reused = await this.reusedCallId(decoded.reply);
        if (reused) {
          await this.recordProtocolError(
            step,
            attempt,
            `tool call id "${reused}" was already used`,
            replyEvidence(decoded.reply),
          );
          return stop(
            this.run,
            "stopped",
            "protocol_error",
            `the model reused tool call id "${reused}"; nothing from that reply ran`,
          );
        }
        return this.recordReply(step, attempt, decoded.reply);
      }
      const { error, evidence } = decoded;
      if (error instanceof ProtocolError) {
        await this.recordProtocolError(step, attempt, error.message, evidence);
        return stop(this.run, "stopped", "protocol_error", `${error.message}`);
      }
      const failure =
        error instanceof ProviderError
          ? error
          : new ProviderError("TRANSPORT", `the model stream failed (${errorName(error)})`);
      // Provider messages can quote a server's body: keep them recordable (no lone surrogates).
      const failureMessage = toWellFormed(failure.message);
      const details = {
        ...(failure.status !== undefined ? { status: failure.status } : {}),
        ...(failure.requestId !== undefined ? { request_id: failure.requestId } : {}),
        ...(hasEvidence(evidence) ? { evidence } : {}),
      };
      const retry = nextModelRetry(this.run, failure);
      if (retry.retry) {
        await this.run.record({
          type: "model.retryable_error",
          data: {
            step,
            attempt,
            code: failure.code,
            message: failureMessage,
            retry_in_ms: retry.delayMs,
            ...details,
          },
        });
        await (this.run.options.sleep ?? sleep)(retry.delayMs, this.run.signal);
        continue;
      }
      await this.run.record({
        type: "model.failed",
        data: { step, attempt, code: failure.code, message: failureMessage, ...details },
      });
      const why = failure.retryable ? `gave up after ${attempt + 1} attempts: ` : "";
      const advice = (this.run.options.providerAdvice ?? generalProviderAdvice)(failure.code);
      return stop(
        this.run,
        "stopped",
        "provider_error",
        `${why}${failure.code}: ${failureMessage}${advice === undefined ? "" : ` (what to do: ${advice})`}`,
      );
    }
  }

  private budgetSpent(): boolean {
    return this.run.state.turnModelRequests >= this.run.limits.maxModelRequests;
  }

  private stopForBudget(): Promise<RunSummary> {
    const message = `the model-request budget (${this.run.limits.maxModelRequests}) is used up`;
    return stop(this.run, "stopped", "budget_exhausted", message);
  }

  /**
   * The request's size in tokens: its JSON bytes (system prompt, messages, tool specs) as a
   * basis, calibrated by the provider's reports for this session's earlier requests.
   */
  private estimate() {
    const basis = basisTokens(this.requestBytes());
    return {
      basis_tokens: basis,
      estimated_input_tokens: this.run.state.calibration.estimate(basis),
      context_window: this.run.budget.window,
      reply_reserve: this.run.budget.reserve,
    };
  }

  /** A compaction asked for by the user (harness compact): now, whatever the context's size. */
  async compactNow(instructions: string | undefined): Promise<CompactionOutcome> {
    return compactHistory({
      run: this.run,
      step: this.run.state.replyCount,
      system: this.systemMessage(),
      requestBytes: this.requestBytes(),
      specBytes: this.specBytes ?? 0,
      ...(instructions !== undefined ? { instructions } : {}),
    });
  }

  private specBytes: number | undefined;
  /** The snapshot specBytes was measured on: a changed tool surface is measured again. */
  private specsOf: ToolSnapshot | undefined;

  private requestBytes(): number {
    const tools = this.run.offered();
    if (this.specsOf !== tools) {
      this.specBytes = Buffer.byteLength(JSON.stringify(tools.specs));
      this.specsOf = tools;
    }
    this.specBytes ??= 0;
    this.systemBytes ??= Buffer.byteLength(JSON.stringify(this.systemMessage()));
    return this.systemBytes + this.run.state.messageBytes + this.specBytes;
  }

  /** The system message's JSON bytes: it is fixed for the session, and every estimate needs them. */
  private systemBytes: number | undefined;

  /**
   * Still over the threshold after pruning: summarize the older turns, at most
   * MAX_COMPACTIONS_PER_STEP times per step (then the window check decides).
   */
  private async compactIfNeeded(step: number): Promise<CompactionOutcome | undefined> {
    if (this.estimate().estimated_input_tokens <= pruneThreshold(this.run.budget)) return undefined;
    if ((this.run.state.compactionsByStep.get(step) ?? 0) >= MAX_COMPACTIONS_PER_STEP) return undefined;
    return compactHistory({
      run: this.run,
      step,
      system: this.systemMessage(),
      requestBytes: this.requestBytes(),
      specBytes: this.specBytes ?? 0,
    });
  }

  /**
   * Over the threshold, replace the oldest tool results by placeholders before the request is
   * built. Decided from the journal alone (messages, calibration), so a resume decides the same.
   */
  private async pruneIfNeeded(step: number): Promise<void> {
    const before = this.estimate().estimated_input_tokens;
    if (before <= pruneThreshold(this.run.budget)) return;
    const plan = await planPrune({
      state: this.run.state,
      requestBytes: this.requestBytes(),
      target: pruneTarget(this.run.budget),
      artifacts: this.run.options.runtime.artifacts,
    });
    if (plan === undefined) return;
    await this.run.record({
      type: "context.pruned",
      data: { step, results: plan.results, tokens_before: before, tokens_after: plan.tokensAfter },
    });
  }

  /** The rules, then the environment and instructions the session recorded at start. */
  private systemMessage(): string {
    const { state, systemPrompt } = this.run;
    this.system ??= systemText(systemPrompt, state.header?.environment, state.startInstructions ?? []);
    return this.system;
  }

  private system: string | undefined;

  /**
   * The first of the reply's call ids used before (by the session, or earlier in the reply). The
   * fold's set holds fingerprints: a yes is confirmed against the journal's records.
   */
  private async reusedCallId(reply: Reply): Promise<string | undefined> {
    const seen = new Set<string>();
    let used: Set<string> | undefined;
    for (const call of reply.calls) {
      if (seen.has(call.id)) return call.id;
      if (this.run.state.callIds.has(call.id)) {
        if (this.run.records === undefined) return call.id;
        used ??= callIdsIn(await this.run.records());
        if (used.has(call.id)) return call.id;
      }
      seen.add(call.id);
    }
    return undefined;
  }

  /**
   * Journal a decoded reply. The decoder bounds and cleans model output, so the journal should
   * accept every reply; should one still be refused (an event the journal cannot encode), it is
   * recorded as a protocol error instead: the run stops cleanly and a resume does not meet the
   * same unrecordable reply half-processed.
   */
  private async recordReply(step: number, attempt: number, reply: Reply): Promise<RunSummary | undefined> {
    try {
      // A reply with calls waits for the fsync of its first batch's intents (or of whatever the
      // runtime records first); one without calls is durable before acceptance runs anything.
      const event = { type: "model.reply", data: { step, ...reply } } as const;
      await (reply.calls.length > 0 ? this.run.defer(event) : this.run.record(event));
      return undefined;
    } catch (error) {
      if (!(error instanceof JournalError) || error.code !== "INVALID_EVENT") throw error;
    }
    const message = "the reply could not be recorded in the journal; nothing from it ran";
    await this.recordProtocolError(step, attempt, message, replyEvidence(reply));
    return stop(this.run, "stopped", "protocol_error", message);
  }

  private async recordProtocolError(step: number, attempt: number, error: string, evidence: StreamEvidence) {
    await this.run.record({ type: "model.protocol_error", data: { step, attempt, error, evidence } });
  }
}

function errorName(error: unknown): string {
  return error instanceof Error ? toWellFormed(String(error.name).slice(0, 40)) : "error";
}

function hasEvidence(evidence: StreamEvidence): boolean {
  return evidence.events > 0;
}

/**
 * The bytes of every image the messages carry, from the session's artifacts (each read is checked
 * against its SHA-256); one that cannot be read is left out, and the provider says so in its place.
 */
async function imageBytes(
  messages: readonly ModelMessage[],
  artifacts: ArtifactStore,
): Promise<Map<string, Uint8Array>> {
  const found = new Map<string, Uint8Array>();
  for (const message of messages) {
    if (message.role !== "user" && message.role !== "tool") continue;
    for (const image of message.images ?? []) {
      if (found.has(image.sha256)) continue;
      const bytes = await artifacts.read(image.artifact).catch(() => undefined);
      if (bytes !== undefined) found.set(image.sha256, bytes);
    }
  }
  return found;
}
