import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import type { ModelMessage, ToolCall } from "../protocol/types.js";
import type { HistoryEntry } from "../runtime/ports.js";
import { projectForModel } from "../runtime/projection.js";
import type { ToolResult } from "../runtime/result.js";
import type { JsonObject } from "../shared/json.js";
import { pinnedMessages, summaryMessage } from "./compaction.js";
import { type InstructionFile, instructionsText } from "./instructions.js";
import { prunedPlaceholder } from "./pruning.js";
import { TokenCalibration } from "./tokens.js";

const RESOLUTION_NOTES = {
  applied: "the operation was verified to have taken effect; do not repeat it.",
  not_applied: "the operation was verified NOT to have taken effect; it may be done again if still needed.",
  undetermined: "whether the operation took effect could not be established.",
} as const;

export type Outcome =
  | { kind: "finished"; data: EventData<"run.finished"> }
  | { kind: "stopped"; data: EventData<"run.stopped"> }
  | { kind: "cancelled"; data: EventData<"run.cancelled"> }
  | { kind: "interrupted"; data: EventData<"turn.interrupted"> };

/**
 * Everything the engine needs to know about a session, derived from its records alone: a fold
 * over the journal. The model's messages, the pending calls, the versions this session has
 * observed and every budget counter come from here, so a resumed session sees exactly what
 * the interrupted one had recorded.
 */
export class SessionState {
  header: EventData<"session.started"> | undefined;
  /** The tools the model was last offered (name → digest), and their digest: the header's, then each `tools.changed`. */
  surface = new Map<string, string | undefined>();
  toolsDigest: string | undefined;
  goal: string | undefined;
  /** Messages after the system prompt, in model order. */
  readonly messages: ModelMessage[] = [];
  readonly replies: EventData<"model.reply">[] = [];
  readonly callIds = new Set<string>();
  readonly started = new Map<string, EventData<"tool.started">>();
  readonly results = new Map<string, EventData<"tool.result">>();
  /** Calls the person ran themselves (`user.command`): their results are never messages to the model. */
  readonly userCommands = new Map<string, EventData<"user.command">>();
  readonly observed = new Map<string, string>();
  /** Latest proposal per path (propose mode), and the ids already applied. */
  readonly proposals = new Map<string, EventData<"proposal.recorded">>();
  readonly appliedProposals = new Set<string>();
  /** Process groups spawned by calls, for killing survivors after a crash. */
  readonly spawns: EventData<"process.spawned">[] = [];
  /** Settled calls in commit order, with their arguments (for observation-based policies). */
  readonly history: HistoryEntry[] = [];
  private readonly callArguments = new Map<string, ToolCall>();
  /** Human resolutions of unknown outcomes, by call id (the latest wins). */
  readonly resolutions = new Map<string, EventData<"review.resolved">>();
  /** Results replaced by a placeholder in what the model is sent: the artifact holding each, by call id. */
  readonly pruned = new Map<string, EventData<"context.pruned">["results"][number]["artifact"]>();
  /** Instructions recorded at start (undefined: a session recorded before they were). */
  startInstructions: InstructionFile[] | undefined;
  /** Every instructions file pinned for this session, in load order. */
  readonly instructions: InstructionFile[] = [];
  /** Instructions files loaded during the run (not at start), in load order: pinned across compactions. */
  readonly nestedInstructions: InstructionFile[] = [];
  /** Compactions recorded, by the step that did them. */
  readonly compactionsByStep = new Map<number, number>();
  /** Directories already looked at for a nested AGENTS.md. */
  readonly checkedDirectories = new Set<string>();
  modelRequests = 0;
  /** The current turn (1 for a session's goal) and the counters budgets apply to: this turn's own. */
  turn = 0;
  turnModelRequests = 0;
  private turnToolCallsBefore = 0;
  private turnResultsBefore = 0;
  /**
   * The person's own words as the model was sent them: each turn's input (the goal first) and
   * each delivered steer, in order. Compaction pins them: they are never summarized away.
   */
  readonly userMessages: ModelMessage[] = [];
  /** Steering typed but not yet sent to the model, oldest first. */
  readonly pendingSteers: string[] = [];
  /** The model owes a reply: input or steering arrived after its latest reply. */
  replyPending = false;
  /**
   * The model source the session talks to and the run options that rebuild it: the header's,
   * then each `model.switched`'s.
   */
  provider: JsonObject | undefined;
  options: JsonObject | undefined;
  /** Set when this session was forked from another (its first record). */
  forkedFrom: EventData<"session.forked"> | undefined;
  /** Retryable failures since the last reply, and the backoff they asked for (resume keeps both). */
  retriesSinceReply = 0;
  retryWaitSinceReply = 0;
  /** Model attempts whose outcome is recorded (reply, retryable error, failure, protocol error). */
  ordinal = 0;
  batches = 0;
  outcome: Outcome | undefined;
  records = 0;
  usage = { input_tokens: 0, output_tokens: 0, reasoning_tokens: 0, cached_tokens: 0, cache_write_tokens: 0 };
  /** Reported input tokens against estimated bases of this session's requests. */
  readonly calibration = new TokenCalibration();
  /** The basis of the request in flight (from its model.started), paired with the reply's report. */
  private pendingBasis: number | undefined;
  /** The largest request so far: harness's estimate before sending, the provider's report after. */
  peakEstimatedInputTokens: number | null = null;
  peakReportedInputTokens: number | null = null;

  static from(records: readonly AnyRecord[]): SessionState {
    const state = new SessionState();
    for (const record of records) state.apply(record);
    return state;
  }

  apply(record: AnyRecord): void {
    this.records += 1;
    switch (record.type) {
      case "session.started":
        this.header = record.data;
        this.surface = new Map(record.data.tools.map((t) => [t.name, t.digest]));
        this.toolsDigest = record.data.tools_digest;
        this.provider = record.data.provider;
        this.options = record.data.options;
        break;
      case "model.switched":
        this.provider = record.data.to;
        this.options = record.data.options;
        break;
      case "tools.changed":
        this.surface = new Map(record.data.tools.map((t) => [t.name, t.digest]));
        this.toolsDigest = record.data.tools_digest;
        break;
      case "user.input":
        this.goal ??= record.data.text;
        // A new turn: its own budgets, and no outcome until it ends.
        this.turn = record.data.turn ?? this.turn + 1;
        this.turnModelRequests = 0;
        this.turnToolCallsBefore = this.started.size;
        this.turnResultsBefore = this.results.size;
        this.outcome = undefined;
        this.replyPending = true;
        this.addUserMessage(record.data.text);
        break;
      case "user.command":
        this.userCommands.set(record.data.call_id, record.data);
        this.callArguments.set(record.data.call_id, {
          id: record.data.call_id,
          name: "shell",
          arguments: { command: record.data.command },
        });
        break;
      case "user.steered":
        this.pendingSteers.push(record.data.text);
        break;
      case "steer.delivered":
        for (const text of this.pendingSteers.splice(0, record.data.count)) this.addUserMessage(text);
        this.replyPending = true;
        break;
      case "turn.interrupted":
        this.outcome = { kind: "interrupted", data: record.data };
        break;
      case "session.forked":
        this.forkedFrom = record.data;
        break;
      case "instructions.loaded":
        this.instructions.push(...record.data.files);
        for (const directory of record.data.checked ?? []) this.checkedDirectories.add(directory);
        if (record.data.trigger === "start") {
          this.startInstructions = record.data.files;
        } else {
          // Appended where it was read, so every earlier request stays a prefix of the next.
          this.nestedInstructions.push(...record.data.files);
          for (const file of record.data.files)
            this.addMessage({ role: "user", content: instructionsText(file) });
        }
        break;
      case "model.started":
        this.modelRequests += 1;
        this.turnModelRequests += 1;
        this.pendingBasis = record.data.basis_tokens;
        this.peakEstimatedInputTokens = larger(
          this.peakEstimatedInputTokens,
          record.data.estimated_input_tokens,
        );
        break;
      case "model.retryable_error":
        this.ordinal += 1;
        this.retriesSinceReply += 1;
        this.retryWaitSinceReply += record.data.retry_in_ms;
        break;
      case "model.failed":
      case "model.protocol_error":
        this.ordinal += 1;
        this.pendingBasis = undefined;
        break;
      case "model.reply": {
        this.ordinal += 1;
        this.replyPending = false;
        this.retriesSinceReply = 0;
        this.retryWaitSinceReply = 0;
        this.replies.push(record.data);
        for (const call of record.data.calls) {
          this.callIds.add(call.id);
          this.callArguments.set(call.id, call);
        }
        const message: ModelMessage = {
          role: "assistant",
          content: record.data.text,
          calls: record.data.calls,
        };
        if (record.data.reasoning) message.reasoning = record.data.reasoning;
        this.addMessage(message);
        const usage = record.data.usage;
        if (this.pendingBasis !== undefined && usage?.input_tokens !== undefined) {
          this.calibration.add(this.pendingBasis, usage.input_tokens);
        }
        this.pendingBasis = undefined;
        this.peakReportedInputTokens = larger(this.peakReportedInputTokens, usage?.input_tokens);
        this.addUsage(usage);
        break;
      }
      case "tool.started":
        this.started.set(record.data.call_id, record.data);
        this.batches = Math.max(this.batches, record.data.batch + 1);
        break;
      case "tool.result": {
        this.results.set(record.data.call_id, record.data);
        this.noteOutcome(record.data.call_id);
        if (!this.userCommands.has(record.data.call_id))
          this.addMessage({
            role: "tool",
            call_id: record.data.call_id,
            name: record.data.name,
            status: record.data.status,
            content: projectForModel(record.data as ToolResult),
          });
        const data = record.data.data;
        if (
          record.data.status === "ok" &&
          typeof data?.path === "string" &&
          typeof data.version === "string"
        ) {
          this.observed.set(data.path, data.version);
        }
        const entry: HistoryEntry = {
          call_id: record.data.call_id,
          name: record.data.name,
          arguments: this.callArguments.get(record.data.call_id)?.arguments ?? {},
          status: record.data.status,
        };
        if (data !== undefined) entry.data = data;
        if (record.data.artifact !== undefined) entry.artifact = record.data.artifact.id;
        this.history.push(entry);
        break;
      }
      case "review.resolved": {
        this.resolutions.set(record.data.call_id, record.data);
        this.noteOutcome(record.data.call_id);
        // The model learns what a person established about the call, next to its result.
        const index = this.messages.findIndex((m) => m.role === "tool" && m.call_id === record.data.call_id);
        const message = this.messages[index];
        if (message?.role === "tool") {
          const note = RESOLUTION_NOTES[record.data.resolution];
          const updated = {
            ...message,
            content: `${message.content}\n[Review by ${record.data.by}: ${note} Evidence: ${record.data.evidence}]`,
          };
          this.messageBytes += jsonBytes(updated) - jsonBytes(message);
          this.messages[index] = updated;
        }
        break;
      }
      case "context.compacted": {
        this.compact(record.data.replaced_messages, record.data.summary);
        const step = record.data.step;
        this.compactionsByStep.set(step, (this.compactionsByStep.get(step) ?? 0) + 1);
        const input = record.data.usage?.input_tokens;
        if (this.pendingBasis !== undefined && input !== undefined)
          this.calibration.add(this.pendingBasis, input);
        this.pendingBasis = undefined;
        this.peakReportedInputTokens = larger(this.peakReportedInputTokens, input);
        this.addUsage(record.data.usage);
        break;
      }
      case "context.pruned":
        for (const { call_id, artifact } of record.data.results) this.prune(call_id, artifact);
        break;
      case "proposal.recorded":
        this.proposals.set(record.data.path, record.data);
        break;
      case "proposal.applied":
        if (record.data.outcome !== "conflict") this.appliedProposals.add(record.data.proposal_id);
        break;
      case "process.spawned":
        this.spawns.push(record.data);
        break;
      case "run.finished":
        this.outcome = { kind: "finished", data: record.data };
        break;
      case "run.stopped":
        this.outcome = { kind: "stopped", data: record.data };
        break;
      case "run.cancelled":
        this.outcome = { kind: "cancelled", data: record.data };
        break;
      default:
        break;
    }
  }

  private addUsage(usage: EventData<"model.reply">["usage"]): void {
    if (!usage) return;
    this.usage.input_tokens += usage.input_tokens ?? 0;
    this.usage.output_tokens += usage.output_tokens ?? 0;
    this.usage.reasoning_tokens += usage.reasoning_tokens ?? 0;
    this.usage.cached_tokens += usage.cached_tokens ?? 0;
    this.usage.cache_write_tokens += usage.cache_write_tokens ?? 0;
  }

  /** The first `replaced` messages give way to the pinned set and the summary; the rest follow unchanged. */
  private compact(replaced: number, summary: string): void {
    const kept = this.messages.slice(replaced);
    const next = [...pinnedMessages(this, kept), summaryMessage(summary), ...kept];
    this.messages.length = 0;
    this.messageBytes = 0;
    for (const message of next) this.addMessage(message);
  }

  private prune(callId: string, artifact: EventData<"context.pruned">["results"][number]["artifact"]): void {
    this.pruned.set(callId, artifact);
    const index = this.messages.findIndex((m) => m.role === "tool" && m.call_id === callId);
    const message = this.messages[index];
    if (message?.role !== "tool") return;
    const updated = { ...message, content: prunedPlaceholder(message.name, artifact) };
    this.messageBytes += jsonBytes(updated) - jsonBytes(message);
    this.messages[index] = updated;
    // read_artifact checks the pruned artifact against the file it came from, like a preview's.
    const entry = this.history.find((h) => h.call_id === callId);
    if (entry !== undefined) entry.artifact ??= artifact.id;
  }

  /** UTF-8 bytes of `messages` as JSON, kept as they are added so estimates stay O(1). */
  messageBytes = 0;

  private addUserMessage(text: string): void {
    const message: ModelMessage = { role: "user", content: text };
    this.userMessages.push(message);
    this.addMessage(message);
  }

  private addMessage(message: ModelMessage): void {
    this.messages.push(message);
    this.messageBytes += jsonBytes(message) + 1;
  }

  get toolCalls(): number {
    return this.started.size;
  }

  /** The results recorded in the current turn, in order (results are never recorded twice). */
  get turnResults(): EventData<"tool.result">[] {
    return [...this.results.values()].slice(this.turnResultsBefore);
  }

  /** Calls started in the current turn (the tool-call budget is per turn). */
  get turnToolCalls(): number {
    return this.started.size - this.turnToolCallsBefore;
  }

  get lastReply(): EventData<"model.reply"> | undefined {
    return this.replies.at(-1);
  }

  /** Calls of the last reply with neither a start nor a result: safe to execute now. */
  pendingCalls(): ToolCall[] {
    const reply = this.lastReply;
    if (!reply) return [];
    return reply.calls.filter((call) => !this.started.has(call.id) && !this.results.has(call.id));
  }

  /** Calls that started but whose outcome was never recorded. */
  startedWithoutResult(): EventData<"tool.started">[] {
    return [...this.started.values()].filter((s) => !this.results.has(s.call_id));
  }

  /** True when some call's outcome is unknown: the session needs a human. */
  /** True when some call's outcome is unknown and no person has resolved it. */
  hasUnknownOutcome(): boolean {
    return this.unknownOutcomes.size > 0;
  }

  /**
   * Calls whose outcome is unknown and that no person has settled (no resolution, or one that
   * could not determine it): kept as records arrive, since the engine asks after every batch.
   */
  private readonly unknownOutcomes = new Set<string>();

  private noteOutcome(callId: string): void {
    const unknown = this.results.get(callId)?.status === "unknown";
    const resolution = this.resolutions.get(callId)?.resolution;
    if (unknown && (resolution === undefined || resolution === "undetermined"))
      this.unknownOutcomes.add(callId);
    else this.unknownOutcomes.delete(callId);
  }

  /** Calls whose outcome is unknown and not (or not conclusively) resolved. */
  unresolvedUnknowns(): EventData<"tool.result">[] {
    return [...this.results.values()].filter(
      (r) =>
        r.status === "unknown" &&
        (this.resolutions.get(r.call_id)?.resolution ?? "undetermined") === "undetermined",
    );
  }
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

function larger(peak: number | null, value: number | undefined): number | null {
  return value === undefined ? peak : Math.max(peak ?? 0, value);
}
