import type { z } from "zod";
import type { AnyNewEvent } from "../journal/vocabulary.js";
import type { ToolCall } from "../protocol/types.js";
import { digestOf } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";
import { sleep } from "../shared/sleep.js";
import { ToolError, TRANSIENT_ERROR_CODES } from "../tools/errors.js";
import type { AnyTool, ArtifactStore, ReadAccess, ResourceSet, ToolContext } from "../tools/tool.js";
import type { WorkspaceFs } from "../workspace/fs.js";
import type {
  ApprovalPort,
  ApprovalRequest,
  GrantPort,
  HistoryEntry,
  HookCallContext,
  HookPort,
  HookRecord,
  PermissionDecision,
  PermissionPort,
  ProgressListener,
  ProposalPort,
  ProposalRecord,
  Recorder,
} from "./ports.js";
import { applyPreviewLimit } from "./projection.js";
import type { SnapshotEntry, ToolSnapshot } from "./registry.js";
import { errorResult, okResult, resultFromThrown, type ToolResult, toJsonObject } from "./result.js";
import { planBatches } from "./scheduler.js";
import { closestName } from "./suggest.js";

export interface RuntimeOptions {
  sessionId: string;
  snapshot: ToolSnapshot;
  fs: WorkspaceFs;
  hostRoot?: string;
  artifacts: ArtifactStore;
  permissions: PermissionPort;
  approver: ApprovalPort;
  grants: GrantPort;
  hooks?: HookPort;
  /** Propose mode: where proposing calls write instead of the workspace. */
  proposals?: ProposalPort;
  observedVersion(canonicalPath: string): string | undefined;
  /** Settled calls of the session so far, for policies that depend on observations. */
  history?(): readonly HistoryEntry[];
  previewLimitBytes: number;
  poolSize: number;
  /** Runtime-level retries of transient infrastructure failures (pure/idempotent tools only). */
  retry: { maxAttempts: number; baseDelayMs: number; maxDelayMs: number };
  /** Extra time a handler gets to settle after its signal fired, before it is abandoned. */
  settleGraceMs: number;
  timeoutFor?(tool: AnyTool): number;
  progress?: ProgressListener;
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  random?(): number;
}

export interface RunCallsInput {
  calls: readonly ToolCall[];
  /** Tool calls the budget still allows to start. */
  remainingToolCalls: number;
  signal: AbortSignal;
  recorder: Recorder;
  /** Id of the first batch planned by this invocation (batch ids are unique per session). */
  firstBatchId: number;
}

export interface RunCallsOutcome {
  /** Results committed to the journal, in call order. */
  committed: ToolResult[];
  stop?: "budget_exhausted" | "cancelled";
}

/** A call that passed lookup and validation. */
interface Prepared {
  index: number;
  call: ToolCall;
  entry: SnapshotEntry;
  args: unknown;
  resources: ResourceSet;
  concurrencySafe: boolean;
  permission?: PermissionDecision;
  /** Propose mode: this call's view of the workspace with the pending proposals. */
  overlay?: { fs: WorkspaceFs; finish(): ProposalRecord[] };
}

type Slot = { kind: "done"; result: ToolResult } | { kind: "run"; prepared: Prepared } | { kind: "pending" };

const TIMEOUT = Symbol("timeout");
/** The tool whose permission decides what any tool may reveal of a file's content. */
const READ_TOOL = "read_file";
const TRANSIENT_CODES = TRANSIENT_ERROR_CODES;

/**
 * The tool-call pipeline: lookup → schema validation → semantic validation → permission
 * (+ approval, + admit hooks) → scheduling → execution (timeouts, cancellation, wrap hooks,
 * retries) → normalization → ordered commit. Every call ends in exactly one committed result,
 * paired with its call id; failures are results for the model, never exceptions.
 */
export class ToolRuntime {
  constructor(private readonly options: RuntimeOptions) {}

  async runCalls(given: RunCallsInput): Promise<RunCallsOutcome> {
    // Hook decisions gathered between writes go into the journal with the next write, so the
    // journal keeps them in the order they happened (and costs no extra fsync).
    const input: RunCallsInput = {
      ...given,
      recorder: {
        record: (events) => {
          const hooks = this.drainHookRecords().map((data): AnyNewEvent => ({ type: "hook.decided", data }));
          return given.recorder.record([...hooks, ...events]);
        },
      },
    };
    const slots: Slot[] = [];
    for (const [index, call] of input.calls.entries()) {
      slots.push(await this.prepare(index, call));
    }
    const committer = new OrderedCommitter(slots, input.recorder, this.options.progress);
    const runnable = slots.flatMap((s) => (s.kind === "run" ? [s.prepared] : []));
    const batches = planBatches(runnable);
    let remaining = input.remainingToolCalls;
    let stop: RunCallsOutcome["stop"];
    let batchId = input.firstBatchId;

    await committer.flush();
    for (const batch of batches) {
      // Authorization happens batch by batch, in call order, and only for calls the budget will
      // let start: nobody is asked to approve a call that cannot run.
      const authorized: Prepared[] = [];
      for (const prepared of batch) {
        if (input.signal.aborted) break;
        if (remaining - authorized.length <= 0) {
          stop = "budget_exhausted";
          break;
        }
        const denial = await this.authorize(prepared, input.recorder, input.signal);
        if (denial) committer.settle(prepared.index, denial);
        else authorized.push(prepared);
      }
      if (input.signal.aborted) {
        stop = "cancelled";
        break;
      }
      if (authorized.length > 0) {
        remaining -= authorized.length;
        await this.runBatch(authorized, batchId, input, committer);
        batchId += 1;
      } else {
        await committer.flush();
      }
      if (stop === "budget_exhausted") break;
    }

    if (stop === "cancelled" || input.signal.aborted) {
      stop = "cancelled";
      // Never-started calls get a cancelled result so the transcript stays paired.
      for (const [index, slot] of slots.entries()) {
        if (slot.kind === "run" && !committer.isDone(index)) {
          committer.complete(
            index,
            errorResult(
              identity(slot.prepared.call),
              "CANCELLED",
              "The run was cancelled before this call started.",
              { data: { started: false }, operationApplied: false },
            ),
          );
        }
      }
    }
    await committer.flush();
    const outcome: RunCallsOutcome = { committed: committer.committed };
    if (stop !== undefined) outcome.stop = stop;
    return outcome;
  }

  /** Lookup, schema validation and semantic validation. No side effects. */
  private async prepare(index: number, call: ToolCall): Promise<Slot> {
    const id = identity(call);
    if (call.refused !== undefined) {
      // The decoder kept no usable arguments (over a limit, or not recordable): never run.
      return done(
        errorResult(id, "INVALID_ARGUMENTS", `Invalid arguments for ${call.name}: ${call.refused.reason}`, {
          data: { refused: { reason: call.refused.reason, characters: call.refused.characters } },
        }),
      );
    }
    const entry = this.options.snapshot.get(call.name);
    if (!entry) {
      const names = this.options.snapshot.names;
      const closest = closestName(call.name, names);
      const suggestion = closest ? ` Did you mean "${closest}"?` : "";
      return done(
        errorResult(
          id,
          "UNKNOWN_TOOL",
          `Unknown tool "${call.name}".${suggestion} Available tools: ${names.join(", ")}.`,
          {
            data: { available: names, ...(closest ? { closest } : {}) },
          },
        ),
      );
    }
    await this.notify("before_validate", call, entry);
    const parsed = entry.tool.input.safeParse(call.arguments);
    if (!parsed.success) {
      const fields = describeIssues(parsed.error);
      return done(
        errorResult(
          id,
          "INVALID_ARGUMENTS",
          `Invalid arguments for ${call.name}: ${fields.map((f) => f.text).join("; ")}`,
          {
            data: { fields: fields.map((f) => f.json) },
          },
        ),
      );
    }
    try {
      entry.tool.validate?.(parsed.data);
    } catch (error) {
      return done(resultFromThrown(id, error, 0));
    }
    await this.notify("after_validate", call, entry);
    return {
      kind: "run",
      prepared: {
        index,
        call,
        entry,
        args: parsed.data,
        resources: entry.tool.resources(parsed.data),
        concurrencySafe: entry.tool.concurrencySafe(parsed.data),
      },
    };
  }

  /** Permission: policy, then the approver when asked, then admit hooks. Returns a denial or nothing. */
  private async authorize(
    prepared: Prepared,
    recorder: Recorder,
    signal: AbortSignal,
  ): Promise<ToolResult | undefined> {
    const { call, entry } = prepared;
    const id = identity(call);
    await this.notify("before_permission", call, entry);
    const history = this.options.history?.();
    const decision = await this.options.permissions.decide({
      tool: call.name,
      effect: entry.tool.effect,
      arguments: call.arguments,
      ...(history ? { history } : {}),
    });
    prepared.permission = decision;
    const ruleData: JsonObject = {
      decision: decision.decision,
      source: decision.source,
      reason: decision.reason,
    };
    if (decision.rule !== undefined) ruleData.rule = decision.rule;
    if (decision.decision === "deny") {
      return errorResult(id, "POLICY_DENIED", `Denied by policy: ${decision.reason}`, {
        data: { permission: ruleData },
      });
    }
    if (decision.decision === "propose" && !this.options.proposals) {
      return errorResult(
        id,
        "POLICY_DENIED",
        "Writes are proposals in this run, but no proposal store is set up; nothing was run.",
        {
          data: { permission: ruleData },
        },
      );
    }
    if (decision.decision === "ask") {
      const request: ApprovalRequest = {
        callId: call.id,
        tool: call.name,
        effect: entry.tool.effect,
        arguments: call.arguments,
        callHash: digestOf({ tool: call.name, arguments: call.arguments }),
        display: entry.tool.approvalDetails?.(prepared.args) ?? {},
      };
      if (this.options.grants.covers(request)) {
        prepared.permission = { ...decision, decision: "allow", reason: "approved earlier for this session" };
      } else {
        await recorder.record([
          {
            type: "approval.requested",
            data: {
              call_id: call.id,
              name: call.name,
              call_hash: request.callHash,
              effect: entry.tool.effect,
            },
          },
        ]);
        let answer: Awaited<ReturnType<ApprovalPort["request"]>>;
        try {
          answer = await this.options.approver.request(request, signal);
        } catch {
          answer = { decision: "deny", scope: "once", by: "approver", reason: "the approver failed" };
        }
        const decided: AnyNewEvent = {
          type: "approval.decided",
          data: {
            call_id: call.id,
            call_hash: request.callHash,
            decision: answer.decision,
            scope: answer.scope,
            by: answer.by,
            ...(answer.reason !== undefined ? { reason: answer.reason } : {}),
          },
        };
        await recorder.record([decided]);
        if (answer.decision !== "allow" && signal.aborted) {
          // An interrupted prompt is not the user's refusal: the model must not read it as one.
          return errorResult(id, "CANCELLED", "The run was cancelled while approval was pending.", {
            data: { started: false },
            operationApplied: false,
          });
        }
        if (answer.decision !== "allow") {
          const why = answer.reason ? ` (${answer.reason})` : "";
          return errorResult(id, "USER_DENIED", `Not approved${why}.`, { data: { permission: ruleData } });
        }
        if (answer.scope === "session") this.options.grants.add(request);
        prepared.permission = { ...decision, decision: "allow", reason: `approved by ${answer.by}` };
      }
    }
    if (this.options.hooks) {
      const admitted = await this.options.hooks.admit(
        "before_execute",
        this.hookContext("before_execute", call, entry),
      );
      await this.recordHooks(admitted.records, recorder);
      if (!admitted.allowed) {
        return errorResult(id, "HOOK_DENIED", `Refused by a hook: ${admitted.reason ?? "no reason given"}`);
      }
    }
    return undefined;
  }

  /**
   * What read_file would be allowed to read, for tools that reach file content another way
   * (grep, glob, read_artifact): the same permission port and session grants, never a prompt.
   */
  private async readAccess(path: string): Promise<ReadAccess> {
    const request = { tool: READ_TOOL, effect: "read_only" as const, arguments: { path } };
    const decision = await this.options.permissions.decide(request);
    if (decision.decision === "allow") return "allowed";
    if (decision.decision !== "ask") return "denied";
    const covered = this.options.grants.covers({
      ...request,
      callId: "",
      callHash: digestOf({ tool: READ_TOOL, arguments: request.arguments }),
      display: {},
    });
    return covered ? "allowed" : "ask";
  }

  /** Files whose content a stored artifact holds: the path of the result it was stored for. */
  private artifactSources(id: string): string[] {
    const sources: string[] = [];
    for (const entry of this.options.history?.() ?? []) {
      const path = entry.data?.path;
      if (entry.artifact === id && typeof path === "string" && !sources.includes(path)) sources.push(path);
    }
    return sources;
  }

  private async runBatch(
    batch: Prepared[],
    batchId: number,
    input: RunCallsInput,
    committer: OrderedCommitter,
  ): Promise<void> {
    const queuedAt = Date.now();
    const started: AnyNewEvent[] = batch.map((p) => {
      const data: AnyNewEvent & { type: "tool.started" } = {
        type: "tool.started",
        data: {
          call_id: p.call.id,
          name: p.call.name,
          arguments: p.call.arguments,
          arguments_hash: digestOf(p.call.arguments),
          tool_version: p.entry.tool.version,
          schema_digest: p.entry.schemaDigest,
          effect: p.entry.tool.effect,
          batch: batchId,
        },
      };
      if (p.permission) {
        const permission: JsonObject = {
          decision: p.permission.decision,
          source: p.permission.source,
          reason: p.permission.reason,
        };
        if (p.permission.rule !== undefined) permission.rule = p.permission.rule;
        data.data.permission = permission;
      }
      return data;
    });
    // Intent is durable (one fsync for the whole batch) before any handler of the batch runs.
    await input.recorder.record(started);

    const pool = Math.max(1, this.options.poolSize);
    let next = 0;
    const worker = async () => {
      while (next < batch.length) {
        const prepared = batch[next++];
        if (!prepared) break;
        const queueWait = Date.now() - queuedAt;
        const result = await this.execute(prepared, batchId, queueWait, input);
        committer.complete(prepared.index, result);
        this.options.progress?.callFinished?.({
          call_id: result.call_id,
          name: result.name,
          status: result.status,
          duration_ms: result.duration_ms,
          summary: result.summary,
        });
        await committer.flush();
      }
    };
    await Promise.all(Array.from({ length: Math.min(pool, batch.length) }, worker));
  }

  /** Execution with timeout, cancellation, wrap hooks and bounded retries; then normalization. */
  private async execute(prepared: Prepared, batchId: number, queueWaitMs: number, input: RunCallsInput) {
    const { call, entry } = prepared;
    const tool = entry.tool;
    const startedAt = Date.now();
    // In propose mode reads see the pending proposals too, so a re-read shows the preview the
    // model is building on. One overlay per call, however many attempts it takes.
    const viewsProposals =
      prepared.permission?.decision === "propose" || tool.effect === "read_only" || tool.effect === "pure";
    if (this.options.proposals && viewsProposals) prepared.overlay = this.options.proposals.begin(call.id);
    const timeoutMs = this.options.timeoutFor?.(tool) ?? tool.timeoutMs;
    const retriable = tool.idempotency === "pure" || tool.idempotency === "idempotent";
    let attempts = 0;
    let result: ToolResult;
    for (;;) {
      attempts += 1;
      result = await this.attempt(prepared, timeoutMs, input.signal);
      const transient = result.error_type !== undefined && TRANSIENT_CODES.has(result.error_type);
      if (!transient || !retriable || attempts >= this.options.retry.maxAttempts || input.signal.aborted)
        break;
      const delay = this.backoff(attempts);
      await input.recorder.record([
        {
          type: "tool.retrying",
          data: {
            call_id: call.id,
            attempt: attempts,
            error_type: result.error_type ?? "",
            message: result.summary,
            retry_in_ms: delay,
          },
        },
      ]);
      await (this.options.sleep ?? sleep)(delay, input.signal);
      if (input.signal.aborted) {
        // Cancelled during the back-off: no further attempt; the failed one's outcome stays unknown.
        result = errorResult(
          identity(call),
          "CANCELLED",
          `${call.name} was cancelled while waiting to retry after ${result.error_type ?? "a failure"}.`,
          { data: { last_error: result.error_type ?? null } },
        );
        break;
      }
    }
    if (prepared.overlay) result = asProposal(result, prepared.overlay.finish());
    if (result.status !== "ok") await this.notify("on_error", call, entry, result.status);
    await this.notify("before_project", call, entry, result.status);
    const limited = await applyPreviewLimit(result, this.options.previewLimitBytes, this.options.artifacts);
    const endedAt = Date.now();
    const normalized: ToolResult = {
      ...limited,
      duration_ms: endedAt - startedAt,
      trace: {
        batch: batchId,
        queue_wait_ms: queueWaitMs,
        started_at: new Date(startedAt).toISOString(),
        ended_at: new Date(endedAt).toISOString(),
        attempts,
        output_bytes: Buffer.byteLength(result.content),
        artifacts: [...(limited.artifact ? [limited.artifact.id] : []), ...artifactIdsIn(result.data)],
      },
    };
    await this.notify("after_project", call, entry, normalized.status);
    return normalized;
  }

  private async attempt(prepared: Prepared, timeoutMs: number, runSignal: AbortSignal): Promise<ToolResult> {
    const { call, entry } = prepared;
    const id = identity(call);
    const proposing = prepared.overlay;
    const controller = new AbortController();
    const onRunAbort = () => controller.abort(runSignal.reason);
    if (runSignal.aborted) controller.abort(runSignal.reason);
    else runSignal.addEventListener("abort", onRunAbort, { once: true });
    const timer = setTimeout(() => controller.abort(TIMEOUT), timeoutMs);
    const context: ToolContext = {
      callId: call.id,
      signal: controller.signal,
      fs: proposing?.fs ?? this.options.fs,
      artifacts: this.options.artifacts,
      observedVersion: (path) => this.options.observedVersion(path),
      ...(this.options.hostRoot !== undefined ? { hostRoot: this.options.hostRoot } : {}),
      readAccess: (path) => this.readAccess(path),
      artifactSources: (artifactId) => this.artifactSources(artifactId),
    };
    const began = Date.now();
    await this.notify("before_execute", call, entry);
    const run = () => entry.tool.execute(prepared.args, context);
    const execution = (async (): Promise<ToolResult> => {
      try {
        if (this.options.hooks) {
          const wrapped = await this.options.hooks.wrap(this.hookContext("before_execute", call, entry), run);
          await this.recordHooksLater(wrapped.records);
          if (wrapped.violation !== undefined || !wrapped.executed || wrapped.value === undefined) {
            // When the handler never ran, nothing can have been applied.
            return errorResult(
              id,
              "HOOK_VIOLATION",
              wrapped.violation ?? "a wrap hook did not execute the call",
              {
                data: { executed: wrapped.executed },
                ...(wrapped.executed ? {} : { operationApplied: false }),
              },
            );
          }
          return okResult(id, wrapped.value, Date.now() - began);
        }
        return okResult(id, await run(), Date.now() - began);
      } catch (error) {
        return this.classifyFailure(id, error, controller.signal, Date.now() - began);
      }
    })();
    // A handler that ignores its signal is abandoned after the grace period, reported honestly.
    const abandon = new Promise<ToolResult>((resolve) => {
      const onAbort = () => {
        const grace = setTimeout(() => {
          const timedOut = controller.signal.reason === TIMEOUT;
          resolve(
            errorResult(
              id,
              timedOut ? "TIMEOUT" : "CANCELLED",
              timedOut
                ? `${call.name} did not finish within ${timeoutMs} ms and did not stop when asked; its outcome is unknown.`
                : `${call.name} was cancelled and did not stop in time; its outcome is unknown.`,
              { durationMs: Date.now() - began, data: { abandoned: true } },
            ),
          );
        }, this.options.settleGraceMs);
        grace.unref();
        void execution.finally(() => clearTimeout(grace));
      };
      if (controller.signal.aborted) onAbort();
      else controller.signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const result = await Promise.race([execution, abandon]);
      await this.notify("after_execute", call, entry, result.status);
      return result;
    } finally {
      clearTimeout(timer);
      runSignal.removeEventListener("abort", onRunAbort);
    }
  }

  private classifyFailure(
    id: { call_id: string; name: string },
    error: unknown,
    signal: AbortSignal,
    ms: number,
  ) {
    if (
      signal.aborted &&
      !(error instanceof ToolError && (error.code === "TIMEOUT" || error.code === "CANCELLED"))
    ) {
      const timedOut = signal.reason === TIMEOUT;
      return errorResult(
        id,
        timedOut ? "TIMEOUT" : "CANCELLED",
        timedOut ? `${id.name} ran out of time.` : `${id.name} was cancelled.`,
        { durationMs: ms },
      );
    }
    // A handler that reports "cancelled" because the runtime's time budget fired timed out.
    if (signal.reason === TIMEOUT && error instanceof ToolError && error.code === "CANCELLED") {
      const data = error.data === undefined ? {} : { data: toJsonObject(error.data) };
      return errorResult(id, "TIMEOUT", `${id.name} ran out of time.`, { durationMs: ms, ...data });
    }
    return resultFromThrown(id, error, ms);
  }

  private backoff(attempt: number): number {
    const { baseDelayMs, maxDelayMs } = this.options.retry;
    const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
    return Math.round(ceiling / 2 + (this.options.random ?? Math.random)() * (ceiling / 2));
  }

  private pendingHookRecords: HookRecord[] = [];

  private hookContext(
    point: HookCallContext["point"],
    call: ToolCall,
    entry?: SnapshotEntry,
  ): HookCallContext {
    return {
      point,
      session: this.options.sessionId,
      call_id: call.id,
      tool: call.name,
      arguments: structuredClone(call.arguments),
      effect: entry?.tool.effect ?? "unknown",
    };
  }

  private async notify(
    point: HookCallContext["point"],
    call: ToolCall,
    entry: SnapshotEntry | undefined,
    status?: ToolResult["status"],
  ): Promise<void> {
    if (!this.options.hooks) return;
    const context = this.hookContext(point, call, entry);
    if (status !== undefined) context.status = status;
    this.pendingHookRecords.push(...(await this.options.hooks.notify(point, context)));
  }

  /** Admit decisions are journaled at once: the denial that follows must not precede them. */
  private async recordHooks(records: HookRecord[], recorder: Recorder): Promise<void> {
    this.pendingHookRecords.push(...records);
    if (this.pendingHookRecords.length > 0) await recorder.record([]);
  }

  private async recordHooksLater(records: HookRecord[]): Promise<void> {
    this.pendingHookRecords.push(...records);
  }

  /** Hook records not yet written (the engine journals what is left after a reply's calls). */
  drainHookRecords(): HookRecord[] {
    const all = this.pendingHookRecords;
    this.pendingHookRecords = [];
    return all;
  }
}

/** Commits results in call order as soon as every earlier call has a result. */
class OrderedCommitter {
  readonly committed: ToolResult[] = [];
  private readonly results: (ToolResult | undefined)[];
  private readonly finishedAt: number[] = [];
  private next = 0;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    slots: Slot[],
    private readonly recorder: Recorder,
    private readonly progress?: ProgressListener,
  ) {
    this.results = slots.map((s) => (s.kind === "done" ? s.result : undefined));
    for (const slot of slots) {
      if (slot.kind === "done") {
        this.progress?.callFinished?.({
          call_id: slot.result.call_id,
          name: slot.result.name,
          status: slot.result.status,
          duration_ms: slot.result.duration_ms,
          summary: slot.result.summary,
        });
      }
    }
  }

  isDone(index: number): boolean {
    return this.results[index] !== undefined;
  }

  /** A result decided without running the call (a denial): reported live, committed in order. */
  settle(index: number, result: ToolResult): void {
    this.complete(index, result);
    this.progress?.callFinished?.({
      call_id: result.call_id,
      name: result.name,
      status: result.status,
      duration_ms: result.duration_ms,
      summary: result.summary,
    });
  }

  complete(index: number, result: ToolResult): void {
    this.results[index] = result;
    this.finishedAt[index] = Date.now();
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      const ready: ToolResult[] = [];
      while (this.next < this.results.length && this.results[this.next] !== undefined) {
        ready.push(this.results[this.next] as ToolResult);
        this.next += 1;
      }
      if (ready.length === 0) return;
      const now = Date.now();
      const events: AnyNewEvent[] = [];
      for (const [offset, result] of ready.entries()) {
        const finished = this.finishedAt[this.next - ready.length + offset];
        if (result.trace && finished !== undefined) result.trace.commit_wait_ms = now - finished;
        const { proposals, ...settled } = result;
        for (const proposal of proposals ?? []) {
          events.push({ type: "proposal.recorded", data: { ...proposal, call_id: result.call_id } });
        }
        events.push({ type: "tool.result", data: settled });
      }
      await this.recorder.record(events);
      this.committed.push(...ready);
    });
    return this.flushing;
  }
}

/** A proposing call's result: its proposals ride along until the engine journals them. */
function asProposal(result: ToolResult, proposals: ProposalRecord[]): ToolResult {
  if (proposals.length === 0) return result;
  const ids = proposals.map((p) => p.proposal_id);
  const diffs = proposals.map((p) => p.diff).join("\n");
  return {
    ...result,
    summary: `proposed, not applied: ${result.summary}`,
    content: `PROPOSED (not applied; the workspace is unchanged until a reviewer runs harness apply)\n${result.content}\n${diffs}`,
    data: { ...result.data, proposals: ids },
    proposals,
  };
}

function done(result: ToolResult): Slot {
  return { kind: "done", result };
}

function identity(call: ToolCall) {
  return { call_id: call.id, name: call.name };
}

function describeIssues(error: z.ZodError): { text: string; json: JsonObject }[] {
  return error.issues.map((issue) => {
    const field = issue.path.length > 0 ? issue.path.join(".") : "(arguments)";
    const json: JsonObject = { field, code: issue.code, message: issue.message };
    if (issue.code === "invalid_type") json.expected = String(issue.expected);
    if (issue.code === "unrecognized_keys") json.keys = issue.keys;
    return { text: `${field}: ${issue.message}`, json };
  });
}

function artifactIdsIn(data: JsonObject | undefined): string[] {
  const ids: string[] = [];
  const visit = (value: unknown) => {
    if (typeof value !== "object" || value === null) return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    const record = value as Record<string, unknown>;
    if (typeof record.id === "string" && typeof record.sha256 === "string" && record.id === record.sha256) {
      ids.push(record.id);
    }
    for (const item of Object.values(record)) visit(item);
  };
  visit(data);
  return ids;
}
