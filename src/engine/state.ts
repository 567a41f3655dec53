import type { AnyRecord, EventData, EventType, JournalRecord } from "../journal/vocabulary.js";
import { imageRef } from "../journal/vocabulary.js";
import type { ImageRef, ModelMessage, ToolCall } from "../protocol/types.js";
import { formatNetTarget } from "../rules/net-pattern.js";
import type { HistoryEntry } from "../runtime/ports.js";
import { projectForModel } from "../runtime/projection.js";
import type { ToolResult } from "../runtime/result.js";
import type { UntrustedSeen } from "../runtime/untrusted.js";
import type { JsonObject } from "../shared/json.js";
import type { RecordedAgent } from "../tools/tool.js";
import { CallIdSet } from "./call-ids.js";
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

/** An approval "for this session" and the call it was about: what a resume grants again. */
export interface SessionApproval {
  call: ToolCall;
  decided: EventData<"approval.decided">;
}

/** How a record of type `T` changes the state. */
type Reducer<T extends EventType> = (state: SessionState, record: JournalRecord<T>) => void;
/** One reducer for every event type of the vocabulary. */
type Reducers = { readonly [T in EventType]: Reducer<T> };

/** What the model is told about a background process that did not survive harness. */
export function lostNotice(processId: string): string {
  return `[harness] process ${processId} was lost: harness stopped while it ran, so it was killed and no longer runs. Start it again if it is still needed.`;
}

/** The reducer of a type the engine keeps nothing of (each entry says why). */
const ignore = (): void => {};

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
  /**
   * Deferred tools loaded so far (`tools.loaded`), in the order they are offered after the stable
   * prefix, each with the digest of the definition loaded. A tool loaded again moves to the end.
   */
  loadedTools: { name: string; digest: string }[] = [];
  goal: string | undefined;
  /** Messages after the system prompt, in model order. */
  readonly messages: ModelMessage[] = [];
  /**
   * Replies recorded, and the latest one: a count, not a list, so a long session's fold stays
   * flat (an older reply is the journal's to give back).
   */
  replyCount = 0;
  lastReply: EventData<"model.reply"> | undefined;
  /**
   * Every call id the session has used: a reply may not use one again. Fingerprints, not the
   * ids (call-ids.ts): it grows with the session by 8-22 bytes a call; a yes is confirmed
   * against the journal before a reply is refused.
   */
  readonly callIds = new CallIdSet();
  /**
   * Calls started and not settled, and those whose outcome is unknown (a person reviews them with
   * their arguments). A settled call leaves: the journal keeps its `tool.started`, and the count
   * of calls is `toolCalls`. A long session's fold then holds the step's calls, not all of them.
   */
  readonly started = new Map<string, EventData<"tool.started">>();
  /** `tool.started` records folded, all turns: what the tool-call budgets count. */
  private startedCount = 0;
  /**
   * The results the engine still decides on: those whose message is in front of the model, every
   * unknown outcome (until the session ends: review and compaction look them up) and the person's
   * own commands. A result's `content` is released (the empty string) once its message is pruned
   * (the artifact keeps it); its message compacted away, the result leaves the map (the journal
   * keeps it). A program's call (`parent_call_id`) is no message and is not kept unless unknown.
   */
  readonly results = new Map<string, EventData<"tool.result">>();
  /**
   * The last reply's calls that have started or have a result: `pendingCalls` is the rest. Per
   * reply, so settled calls need not stay in `started` or `results` to be known as run.
   */
  private readonly replyCallsTouched = new Set<string>();
  /** Calls that recorded a process (`process.spawned`), and whether their result is recorded. */
  private readonly spawnCalls = new Map<string, boolean>();
  /**
   * This turn's results of the model's own calls, by tool: how many were denied and how many
   * were not (what `denied-changes.ts` decides on), so a long turn keeps a count per tool, not
   * its results.
   */
  readonly turnOutcomes = new Map<string, { denied: number; other: number }>();
  /** Calls the person ran themselves (`user.command`): their results are never messages to the model. */
  readonly userCommands = new Map<string, EventData<"user.command">>();
  readonly observed = new Map<string, string>();
  /** Latest proposal per path (propose mode), and the ids already applied. */
  readonly proposals = new Map<string, EventData<"proposal.recorded">>();
  readonly appliedProposals = new Set<string>();
  /** Process groups spawned by calls, for killing survivors after a crash. */
  readonly spawns: EventData<"process.spawned">[] = [];
  /**
   * Background processes started and not yet recorded as stopped or lost, by process id: what a
   * resume reports lost when this harness process did not start them.
   */
  readonly backgroundRunning = new Map<string, EventData<"process.started">>();
  /** Settled calls in commit order, with their arguments (for observation-based policies). */
  readonly history: HistoryEntry[] = [];
  private readonly callArguments = new Map<string, ToolCall>();
  /** Approvals "for this session", in journal order: the session's grants, restored on resume. */
  readonly sessionApprovals: SessionApproval[] = [];
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
  /** Skills activated this turn (`skill.activated`), in order: their allowed-tools narrow its calls. */
  activeSkills: EventData<"skill.activated">[] = [];
  /** Calls whose skill activation is journaled (any turn), so none is journaled twice. */
  readonly activatedSkillCalls = new Set<string>();
  /** Compactions recorded at the latest step that did any, by that step. */
  readonly compactionsByStep = new Map<number, number>();
  /** Directories already looked at for a nested AGENTS.md. */
  readonly checkedDirectories = new Set<string>();
  modelRequests = 0;
  /** Dollars spent under a money budget, all turns together: settled requests and finished children. */
  costSpentUsd = 0;
  /** The current turn (1 for a session's goal) and the counters budgets apply to: this turn's own. */
  turn = 0;
  turnModelRequests = 0;
  private turnToolCallsBefore = 0;
  /** Tool calls this turn's finished children made: the session's spend too. */
  private turnAgentToolCalls = 0;
  /**
   * The children this session started (`agent` calls), by call id, in the order started: what
   * each was granted and, once over, how it ended.
   */
  readonly agents = new Map<string, RecordedAgent>();
  /** The paths each agent call's merges are journaled as having changed. */
  readonly changedPaths = new Map<string, Set<string>>();
  /** What the children spent, all turns together (the session's own usage is `usage`). */
  readonly agentUsage = { model_requests: 0, tool_calls: 0, input_tokens: 0, output_tokens: 0 };
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
   * Untrusted results (`tool.result` with `untrusted`) recorded this turn, oldest first: after
   * them, a call or connection that would widen what leaves the machine asks a person.
   */
  turnUntrusted: UntrustedSeen[] = [];
  /** `HOST:PORT` of every connection allowed in this session (`net.connection`). */
  readonly contacted = new Set<string>();
  /** This turn's goal-loop attempts, in order (a new turn starts its own loop). */
  turnAttempts: EventData<"acceptance.attempt">[] = [];
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
    reduce(this, record);
  }

  /**
   * How each event type changes the state: one reducer per type of the vocabulary, so a type
   * added without one does not compile (and a test checks the keys against `EVENT_TYPES`).
   * Types the engine does not fold are listed too, each saying why nothing is kept.
   */
  static readonly reducers: Reducers = {
    "session.started": (state, { data }) => {
      state.header = data;
      state.surface = new Map(data.tools.map((t) => [t.name, t.digest]));
      state.toolsDigest = data.tools_digest;
      state.provider = data.provider;
      state.options = data.options;
    },
    "model.switched": (state, { data }) => {
      state.provider = data.to;
      state.options = data.options;
    },
    // The door that switched the mode narrows its own policy with it (src/acp/modes.ts) and
    // reads it back from the records on load; the engine decides by the recorded policy alone.
    "mode.switched": () => {},
    "tools.changed": (state, { data }) => {
      state.surface = new Map(data.tools.map((t) => [t.name, t.digest]));
      state.toolsDigest = data.tools_digest;
    },
    "tools.loaded": (state, { data }) => {
      const again = new Set(data.names);
      state.loadedTools = state.loadedTools.filter((entry) => !again.has(entry.name));
      data.names.forEach((name, i) => {
        // A name without its digest cannot be checked for staleness: it is not taken as loaded.
        const digest = data.digests[i];
        if (digest !== undefined) state.loadedTools.push({ name, digest });
      });
    },
    "user.input": (state, { data }) => {
      state.goal ??= data.text;
      // A new turn: its own budgets, and no outcome until it ends.
      state.turn = data.turn ?? state.turn + 1;
      state.turnModelRequests = 0;
      state.turnToolCallsBefore = state.startedCount;
      state.turnOutcomes.clear();
      state.turnAgentToolCalls = 0;
      state.turnAttempts = [];
      // The person speaks again: what the model saw last turn no longer stands between them.
      state.turnUntrusted = [];
      // A skill is active for the turn that activated it.
      state.activeSkills = [];
      state.outcome = undefined;
      state.replyPending = true;
      state.addUserMessage(data.text, data.images);
    },
    "agent.started": (state, { data }) => {
      state.agents.set(data.call_id, { started: data });
    },
    "agent.approval": () => {},
    "agent.merge": (state, { data }) => {
      const agent = state.agents.get(data.call_id);
      if (agent) agent.merge = data;
    },
    "agent.finished": (state, { data }) => {
      const agent = state.agents.get(data.call_id);
      if (agent) agent.finished = data;
      // What a child spent counts against this turn's budgets, as if the session had spent it.
      state.turnModelRequests += data.usage.model_requests;
      state.turnAgentToolCalls += data.usage.tool_calls;
      // A child's spend counts against a money budget as the session's own requests do.
      state.costSpentUsd += data.usage.cost_usd ?? 0;
      state.agentUsage.model_requests += data.usage.model_requests;
      state.agentUsage.tool_calls += data.usage.tool_calls;
      state.agentUsage.input_tokens += data.usage.input_tokens;
      state.agentUsage.output_tokens += data.usage.output_tokens;
    },
    "user.command": (state, { data }) => {
      state.userCommands.set(data.call_id, data);
      state.callArguments.set(data.call_id, {
        id: data.call_id,
        name: "shell",
        arguments: { command: data.command },
      });
    },
    "user.steered": (state, { data }) => {
      state.pendingSteers.push(data.text);
    },
    "steer.delivered": (state, { data }) => {
      for (const text of state.pendingSteers.splice(0, data.count)) state.addUserMessage(text);
      state.replyPending = true;
    },
    "turn.interrupted": (state, { data }) => {
      state.outcome = { kind: "interrupted", data };
    },
    "session.forked": (state, { data }) => {
      state.forkedFrom = data;
    },
    "instructions.loaded": (state, { data }) => {
      state.instructions.push(...data.files);
      for (const directory of data.checked ?? []) state.checkedDirectories.add(directory);
      if (data.trigger === "start") {
        state.startInstructions = data.files;
      } else {
        // Appended where it was read, so every earlier request stays a prefix of the next.
        state.nestedInstructions.push(...data.files);
        for (const file of data.files) state.addMessage({ role: "user", content: instructionsText(file) });
      }
    },
    "model.started": (state, { data }) => {
      state.modelRequests += 1;
      state.turnModelRequests += 1;
      state.pendingBasis = data.basis_tokens;
      state.peakEstimatedInputTokens = larger(state.peakEstimatedInputTokens, data.estimated_input_tokens);
    },
    "budget.reserved": () => {},
    // A shared quota lives in its store (the fleet's database), never in the fold: the records
    // say what the session held and spent there, for inspect; a resume asks the store again.
    "quota.reserved": () => {},
    "quota.settled": () => {},
    "quota.refused": () => {},
    "budget.settled": (state, { data }) => {
      state.costSpentUsd += data.cost_usd;
    },
    "model.retryable_error": (state, { data }) => {
      state.ordinal += 1;
      state.retriesSinceReply += 1;
      state.retryWaitSinceReply += data.retry_in_ms;
    },
    "model.failed": (state) => state.attemptFailed(),
    "model.protocol_error": (state) => state.attemptFailed(),
    "model.reply": (state, { data }) => {
      state.ordinal += 1;
      state.replyPending = false;
      state.retriesSinceReply = 0;
      state.retryWaitSinceReply = 0;
      state.replyCount += 1;
      state.lastReply = data;
      state.replyCallsTouched.clear();
      for (const call of data.calls) {
        state.callIds.add(call.id);
        state.callArguments.set(call.id, call);
      }
      const message: ModelMessage = { role: "assistant", content: data.text, calls: data.calls };
      if (data.reasoning) message.reasoning = data.reasoning;
      state.addMessage(message);
      const usage = data.usage;
      if (state.pendingBasis !== undefined && usage?.input_tokens !== undefined) {
        state.calibration.add(state.pendingBasis, usage.input_tokens);
      }
      state.pendingBasis = undefined;
      state.peakReportedInputTokens = larger(state.peakReportedInputTokens, usage?.input_tokens);
      state.addUsage(usage);
    },
    // The request is the runtime's to show and journal; only the answer changes what the session may do.
    "approval.requested": ignore,
    "approval.decided": (state, { data }) => {
      // What a resume grants again: each allow "for this session", with the call it was about.
      const call = state.callArguments.get(data.call_id);
      if (call !== undefined && data.decision === "allow" && data.scope === "session")
        state.sessionApprovals.push({ call, decided: data });
    },
    // Hook decisions are an audit trail: the call's own records say what came of them.
    "hook.decided": ignore,
    "tool.started": (state, { data }) => {
      state.started.set(data.call_id, data);
      state.startedCount += 1;
      state.replyCallsTouched.add(data.call_id);
      // A program's call (`CALL/N`) is not the model's, but its id is taken all the same.
      if (data.parent_call_id !== undefined) state.callIds.add(data.call_id);
      state.batches = Math.max(state.batches, data.batch + 1);
    },
    "process.spawned": (state, { data }) => {
      state.spawns.push(data);
      if (!state.spawnCalls.has(data.call_id)) state.spawnCalls.set(data.call_id, false);
    },
    "process.started": (state, { data }) => {
      state.backgroundRunning.set(data.process_id, data);
    },
    // When it became ready is the starting call's result to tell; nothing the loop decides on.
    "process.ready": ignore,
    "process.stopped": (state, { data }) => {
      state.backgroundRunning.delete(data.process_id);
    },
    "process.lost": (state, { data }) => {
      state.backgroundRunning.delete(data.process_id);
      // The model must not go on believing it runs: it is told with the next request.
      state.addMessage({ role: "user", content: lostNotice(data.process_id) });
    },
    // What left the machine: an audit trail for inspect and the viewer, and the hosts already
    // contacted (after untrusted content, a new one asks a person).
    "net.connection": (state, { data }) => {
      if (data.decision === "allow") state.contacted.add(formatNetTarget(data.host, data.port));
    },
    // Which credential the proxy substituted, for which host: audit only.
    "credential.used": ignore,
    // A retry within one call: the call's result is what the model and the budgets see.
    "tool.retrying": ignore,
    "tool.result": (state, { data: result }) => {
      const nested = result.parent_call_id !== undefined;
      const unknown = result.status === "unknown";
      if (!nested || unknown) state.results.set(result.call_id, result);
      // Settled: only an unknown outcome's start stays (review shows its arguments).
      if (!unknown) state.started.delete(result.call_id);
      state.replyCallsTouched.add(result.call_id);
      if (state.spawnCalls.has(result.call_id)) state.spawnCalls.set(result.call_id, true);
      if (!nested) {
        const tally = state.turnOutcomes.get(result.name) ?? { denied: 0, other: 0 };
        if (result.status === "denied") tally.denied += 1;
        else tally.other += 1;
        state.turnOutcomes.set(result.name, tally);
      }
      if (result.untrusted !== undefined)
        state.turnUntrusted.push({
          call_id: result.call_id,
          name: result.name,
          provenance: result.untrusted,
        });
      state.noteOutcome(result.call_id, result.status);
      // A program's call: the model asked for the batch, not for it, and saw only what the
      // program returned, so it is no message and no observation of a file's version.
      if (nested) state.callIds.add(result.call_id);
      if (!state.userCommands.has(result.call_id) && !nested)
        state.addMessage({
          role: "tool",
          call_id: result.call_id,
          name: result.name,
          status: result.status,
          content: projectForModel(result as ToolResult),
          ...imagesOf(result),
        });
      const data = result.data;
      if (
        !nested &&
        result.status === "ok" &&
        typeof data?.path === "string" &&
        typeof data.version === "string"
      ) {
        state.observed.set(data.path, data.version);
      }
      const entry: HistoryEntry = {
        call_id: result.call_id,
        name: result.name,
        arguments: state.callArguments.get(result.call_id)?.arguments ?? {},
        status: result.status,
      };
      if (data !== undefined) entry.data = data;
      if (result.artifact !== undefined) entry.artifact = result.artifact.id;
      state.history.push(entry);
      // Settled: its arguments live on in the history entry; the index by id is for open calls.
      state.callArguments.delete(result.call_id);
    },
    "proposal.recorded": (state, { data }) => {
      state.proposals.set(data.path, data);
    },
    "proposal.applied": (state, { data }) => {
      if (data.outcome !== "conflict") state.appliedProposals.add(data.proposal_id);
    },
    "review.resolved": (state, { data }) => {
      state.resolutions.set(data.call_id, data);
      state.noteOutcome(data.call_id, state.results.get(data.call_id)?.status);
      // The model learns what a person established about the call, next to its result.
      const index = state.messages.findIndex((m) => m.role === "tool" && m.call_id === data.call_id);
      const message = state.messages[index];
      if (message?.role === "tool") {
        const note = RESOLUTION_NOTES[data.resolution];
        const updated = {
          ...message,
          content: `${message.content}\n[Review by ${data.by}: ${note} Evidence: ${data.evidence}]`,
        };
        state.messageBytes += jsonBytes(updated) - jsonBytes(message);
        state.messages[index] = updated;
      }
    },
    // Its verdict is the run.finished or run.stopped that follows; a finished session rechecks anyway.
    "acceptance.checked": ignore,
    "acceptance.attempt": (state, { data }) => {
      state.turnAttempts.push(data);
      // The checks' failures are the model's next input, within the same turn and its budgets.
      if (data.continued && data.feedback !== undefined) {
        state.addMessage({ role: "user", content: data.feedback });
        state.replyPending = true;
      }
    },
    "context.pruned": (state, { data }) => {
      for (const { call_id, artifact } of data.results) state.prune(call_id, artifact);
    },
    "context.compacted": (state, { data }) => {
      state.compact(data.replaced_messages, data.summary);
      // Only the latest step's count is asked for (a step's compactions are capped): earlier go.
      for (const step of state.compactionsByStep.keys())
        if (step < data.step) state.compactionsByStep.delete(step);
      state.compactionsByStep.set(data.step, (state.compactionsByStep.get(data.step) ?? 0) + 1);
      const input = data.usage?.input_tokens;
      if (state.pendingBasis !== undefined && input !== undefined)
        state.calibration.add(state.pendingBasis, input);
      state.pendingBasis = undefined;
      state.peakReportedInputTokens = larger(state.peakReportedInputTokens, input);
      state.addUsage(data.usage);
    },
    "run.finished": (state, { data }) => {
      state.outcome = { kind: "finished", data };
    },
    "run.stopped": (state, { data }) => {
      state.outcome = { kind: "stopped", data };
    },
    "run.cancelled": (state, { data }) => {
      state.outcome = { kind: "cancelled", data };
    },
    // Liveness only (which process took the session up): nothing a request or a budget depends on.
    "session.resumed": ignore,
    "skill.activated": (state, { data }) => {
      state.activeSkills.push(data);
      state.activatedSkillCalls.add(data.call_id);
    },
    // The expanded text is the `user.input` that follows; what it came from is for audit.
    "command.expanded": ignore,
    // Trust in the journal is settled when it is read, before any fold.
    "journal.adopted": ignore,
    // Which process held the writer lock: the session is the same whoever wrote it.
    "lock.recovered": ignore,
    // Which worker holds the lease: fencing is the PostgreSQL journal's, not the session's.
    "lease.acquired": ignore,
    // The workspace's history: the effects recorder and undo read it from the records themselves.
    "workspace.base": ignore,
    // As workspace.base: what a call changed on disk is the effects recorder's and undo's.
    "workspace.changed": (state, { data }) => {
      // Only an agent call's changes are looked up (a merge finished after a crash records no path twice).
      if (!state.agents.has(data.call_id)) return;
      const paths = state.changedPaths.get(data.call_id) ?? new Set<string>();
      for (const { path } of [...data.created, ...data.modified, ...data.deleted]) paths.add(path);
      state.changedPaths.set(data.call_id, paths);
    },
    // An undo is finished from the records (`unfinishedUndo`), not from the fold.
    "undo.started": ignore,
    // As undo.started: it closes an undo the records describe.
    "undo.finished": ignore,
  };

  /** A model attempt that ended without a reply: it counts, and its estimate pairs with no report. */
  private attemptFailed(): void {
    this.ordinal += 1;
    this.pendingBasis = undefined;
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
    for (const message of this.messages.slice(0, replaced))
      if (message.role === "tool") this.forgetResult(message.call_id);
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
    // A pruned result's image goes with it (the placeholder names the artifact that keeps it).
    const { images: _images, ...rest } = message;
    const updated = { ...rest, content: prunedPlaceholder(message.name, artifact) };
    this.messageBytes += jsonBytes(updated) - jsonBytes(message);
    this.messages[index] = updated;
    this.releaseResult(callId);
    // read_artifact checks the pruned artifact against the file it came from, like a preview's.
    const entry = this.history.find((h) => h.call_id === callId);
    if (entry !== undefined) entry.artifact ??= artifact.id;
  }

  /** A result no longer in front of the model keeps its small fields only (see `results`). */
  private releaseResult(callId: string): void {
    const result = this.results.get(callId);
    if (result !== undefined && result.content !== "") this.results.set(callId, { ...result, content: "" });
  }

  /**
   * A result whose message was compacted away: nothing the engine decides reads it again (an
   * unknown outcome stays, see `results`), and its pruned placeholder is gone with it.
   */
  private forgetResult(callId: string): void {
    this.pruned.delete(callId);
    if (this.results.get(callId)?.status === "unknown") this.releaseResult(callId);
    else this.results.delete(callId);
  }

  /** UTF-8 bytes of `messages` as JSON, kept as they are added so estimates stay O(1). */
  messageBytes = 0;

  private addUserMessage(text: string, images?: ImageRef[]): void {
    const message: ModelMessage =
      images !== undefined && images.length > 0
        ? { role: "user", content: text, images }
        : { role: "user", content: text };
    this.userMessages.push(message);
    this.addMessage(message);
  }

  private addMessage(message: ModelMessage): void {
    this.messages.push(message);
    this.messageBytes += jsonBytes(message) + 1;
  }

  get toolCalls(): number {
    return this.startedCount;
  }

  /** Calls started in the current turn (the tool-call budget is per turn). */
  get turnToolCalls(): number {
    return this.startedCount - this.turnToolCallsBefore + this.turnAgentToolCalls;
  }

  /** Calls of the last reply with neither a start nor a result: safe to execute now. */
  pendingCalls(): ToolCall[] {
    const reply = this.lastReply;
    if (!reply) return [];
    return reply.calls.filter((call) => !this.replyCallsTouched.has(call.id));
  }

  /** Whether the call that recorded this process has its result recorded (its processes ended with it). */
  spawnSettled(callId: string): boolean {
    return this.results.has(callId) || this.spawnCalls.get(callId) === true;
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

  private noteOutcome(callId: string, status: string | undefined): void {
    const unknown = status === "unknown";
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

/** Each record by its type's reducer (the type picks the reducer and the record's shape together). */
function reduce<T extends EventType>(state: SessionState, record: JournalRecord<T>): void {
  const reducer: Reducer<T> = SessionState.reducers[record.type];
  reducer(state, record);
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

function larger(peak: number | null, value: number | undefined): number | null {
  return value === undefined ? peak : Math.max(peak ?? 0, value);
}

/** A tool's successful result that read an image (`data.image`, checked: tool data is not trusted). */
function imagesOf(result: EventData<"tool.result">): { images?: ImageRef[] } {
  if (result.status !== "ok" || result.data?.image === undefined) return {};
  const parsed = imageRef.safeParse(result.data.image);
  return parsed.success ? { images: [parsed.data] } : {};
}
