import type { ArtifactStore } from "../artifacts/store.js";
import { type JournalBackend, JournalError, type JournalWriter } from "../journal/store.js";
import {
  type AnyNewEvent,
  type AnyRecord,
  type EventData,
  JOURNAL_FORMAT_VERSION,
} from "../journal/vocabulary.js";
import { SessionGrantPort } from "../policy/ports.js";
import { decodeStream, ProtocolError, replyEvidence, type StreamEvidence } from "../protocol/decoder.js";
import type { ModelMessage, Reply, StreamEvent } from "../protocol/types.js";
import { type Provider, ProviderError } from "../providers/provider.js";
import { retryDelay } from "../providers/retry.js";
import { type RuntimeOptions, ToolRuntime } from "../runtime/pipeline.js";
import type {
  ApprovalPort,
  GrantPort,
  HookPort,
  PermissionPort,
  ProgressListener,
  ProposalPort,
  ProposalRecord,
} from "../runtime/ports.js";
import type { ToolSnapshot } from "../runtime/registry.js";
import { errorResult, okResult, type ToolResult } from "../runtime/result.js";
import { digestOf } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";
import { sleep } from "../shared/sleep.js";
import { toWellFormed } from "../shared/unicode.js";
import type { WorkspaceFs } from "../workspace/fs.js";
import type { AcceptanceCheck } from "./acceptance.js";
import { EngineError } from "./errors.js";
import { generalProviderAdvice, type ProviderAdvice } from "./provider-advice.js";
import { SessionState } from "./state.js";
import { SYSTEM_PROMPT } from "./system-prompt.js";

export type RunStatus =
  | "verified"
  | "unverified"
  | "stopped"
  | "review_required"
  | "needs_review"
  | "cancelled";

export interface RunSummary {
  status: RunStatus;
  reason: string | null;
  message: string | null;
  session: string;
  events: number;
  model_requests: number;
  tool_calls: number;
  answer: string | null;
  usage: SessionState["usage"];
}

export interface Limits {
  maxModelRequests: number;
  maxToolCalls: number;
  /** Model attempts per step for retryable provider errors. */
  maxModelAttempts: number;
  modelRetryBaseMs: number;
  modelRetryMaxMs: number;
  previewLimitBytes: number;
  poolSize: number;
  /** Largest request (messages + tool specs, as JSON characters) the model may be sent. */
  maxContextChars: number;
  /** Longest total time to spend waiting between retries of one model step. */
  modelRetryMaxTotalMs: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxModelRequests: 50,
  maxToolCalls: 200,
  maxModelAttempts: 4,
  modelRetryBaseMs: 500,
  modelRetryMaxMs: 20_000,
  previewLimitBytes: 40 * 1024,
  poolSize: 8,
  maxContextChars: 2_000_000,
  modelRetryMaxTotalMs: 120_000,
};

export interface PolicyHandle {
  /** JSON description recorded in session.started. */
  describe: JsonObject;
  digest: string;
  permissions: PermissionPort;
}

export interface SpawnInfo {
  callId: string;
  pid: number;
  pgid: number;
  bootId: string;
  startTicks: number;
  sandboxed: boolean;
  /** What the process ran under (journaled when known). */
  purpose?: "shell" | "acceptance" | "hook";
  sandbox_profile?: "workspace-write" | "read-only" | "none";
  env_names?: string[];
}

/**
 * Connects process-running tools to the journal: the tool reports each spawned process group
 * (before waiting on it) through `onSpawn`, and the engine journals it durably.
 */
export class SpawnJournal {
  private sink: ((info: SpawnInfo) => Promise<void>) | undefined;
  readonly onSpawn = async (info: SpawnInfo): Promise<void> => {
    if (!this.sink) throw new Error("no session is recording spawns");
    await this.sink(info);
  };
  attach(sink: ((info: SpawnInfo) => Promise<void>) | undefined): void {
    this.sink = sink;
  }
}

export interface ProcessSupervision {
  journal: SpawnJournal;
  /** Kill what is left of a recorded process group; returns how many processes were killed. */
  killSurvivors(spawn: { pgid: number; bootId: string; startTicks: number }): Promise<number>;
}

/** Live observation of a run (for the CLI's stderr progress and `--events`). */
export interface EngineListener extends ProgressListener {
  record?(record: AnyRecord): void;
  stream?(event: StreamEvent): void;
}

export interface EngineOptions {
  sessionId: string;
  backend: JournalBackend;
  provider: Provider;
  snapshot: ToolSnapshot;
  fs: WorkspaceFs;
  hostRoot?: string;
  artifacts: ArtifactStore;
  workspace: { name: string; fingerprint: string };
  /** Required for a new session; when resuming, it must equal the recorded goal if given. */
  goal?: string;
  policy: PolicyHandle;
  approver: ApprovalPort;
  grants?: GrantPort;
  hooks?: HookPort;
  acceptance: readonly AcceptanceCheck[];
  /** Propose mode: builds the overlay proposing calls write to, from the session's proposals. */
  proposals?(existing: readonly ProposalRecord[]): ProposalPort;
  /** Process-running tools: where spawns are journaled, and how survivors are killed on resume. */
  processes?: ProcessSupervision;
  limits?: Partial<Limits>;
  signal?: AbortSignal;
  listener?: EngineListener;
  /** How the run was set up (recorded in session.started for resume; no secrets, no host paths). */
  setup?: JsonObject;
  /** `new`: the session must not exist; `resume`: it must; `auto`: either. */
  mode: "new" | "resume" | "auto";
  harnessVersion: string;
  /** What to tell the user when a model request fails for good (default: general advice per code). */
  providerAdvice?: ProviderAdvice;
  systemPrompt?: string;
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  random?(): number;
  runtime?: Partial<Pick<RuntimeOptions, "settleGraceMs" | "retry" | "timeoutFor">>;
}

/**
 * Runs one session: start or resume, recover what a crash left, then alternate model requests
 * and tool execution until the model stops calling tools, and decide the outcome from the
 * host's own acceptance checks. The journal is written before every step that depends on it.
 */
export class Engine {
  private readonly limits: Limits;
  private readonly systemPrompt: string;
  private readonly signal: AbortSignal;
  private writer!: JournalWriter;
  private state!: SessionState;

  constructor(private readonly options: EngineOptions) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.systemPrompt = options.systemPrompt ?? SYSTEM_PROMPT;
    this.signal = options.signal ?? new AbortController().signal;
  }

  async run(): Promise<RunSummary> {
    const { backend, sessionId, mode } = this.options;
    const exists = await backend.exists(sessionId);
    if (mode === "resume" && !exists) {
      throw new EngineError(
        "SESSION_NOT_FOUND",
        `no session "${sessionId}" in this workspace (see: harness sessions)`,
      );
    }
    // A lock whose owner is provably gone is taken over and journaled below; a live or
    // unverifiable owner still refuses.
    this.writer = await backend.openWriter(sessionId, { create: mode !== "resume", recoverStaleLock: true });
    this.options.processes?.journal.attach(async (info) => {
      await this.record({
        type: "process.spawned",
        data: {
          call_id: info.callId,
          pid: info.pid,
          pgid: info.pgid,
          boot_id: info.bootId,
          start_ticks: info.startTicks,
          sandboxed: info.sandboxed,
          ...(info.purpose ? { purpose: info.purpose } : {}),
          ...(info.sandbox_profile ? { sandbox_profile: info.sandbox_profile } : {}),
          ...(info.env_names ? { env_names: info.env_names } : {}),
        },
      });
    });
    try {
      this.state = SessionState.from(this.writer.records);
      const recovered = this.writer.recoveredLock;
      const resuming = this.state.header !== undefined;
      if (!resuming) {
        await this.begin();
      } else {
        this.checkIdentity();
      }
      if (recovered) {
        await this.record({
          type: "lock.recovered",
          data: {
            pid: recovered.owner.pid,
            host: recovered.owner.host,
            started_at: recovered.owner.started_at,
            proc_start: recovered.owner.proc_start,
            reason: recovered.reason,
          },
        });
      }
      if (resuming) await this.record({ type: "session.resumed", data: { pid: process.pid } });
      return await this.drive();
    } finally {
      this.options.processes?.journal.attach(undefined);
      await this.writer.close();
    }
  }

  /**
   * For an immediate exit (a second Ctrl-C): synchronously kill the process groups of calls still
   * running and release the writer lock. Every append is already whole and fsynced, so the journal
   * stays consistent; the interrupted calls are reported unknown on resume.
   */
  exitNow(): void {
    if (!this.writer || !this.state) return;
    for (const spawn of this.state.spawns) {
      if (this.state.results.has(spawn.call_id)) continue;
      try {
        process.kill(-spawn.pgid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    void this.writer.close();
  }

  private async drive(): Promise<RunSummary> {
    const orphans = this.state.startedWithoutResult();
    if (orphans.length > 0) {
      let unknown = 0;
      for (const started of orphans) {
        const result = await this.recover(started);
        if (result.status === "unknown") unknown += 1;
        await this.record({ type: "tool.result", data: result });
      }
      if (unknown > 0) {
        return this.stop(
          "review_required",
          "unknown_outcome",
          "a tool call's outcome is unknown; inspect the workspace",
        );
      }
    }
    if (this.state.hasUnknownOutcome()) {
      return this.stop(
        "review_required",
        "unknown_outcome",
        "a tool call's outcome is unknown; inspect the workspace",
      );
    }
    if (this.state.outcome?.kind === "finished") return this.recheckFinished();

    const runtime = this.createRuntime();
    for (;;) {
      if (this.signal.aborted) return this.cancel();
      const pending = this.state.pendingCalls();
      if (pending.length > 0) {
        const outcome = await runtime.runCalls({
          calls: pending,
          remainingToolCalls: this.limits.maxToolCalls - this.state.toolCalls,
          signal: this.signal,
          recorder: { record: (events) => this.record(...events) },
          firstBatchId: this.state.batches,
        });
        const hookRecords = runtime.drainHookRecords();
        if (hookRecords.length > 0)
          await this.record(...hookRecords.map((data): AnyNewEvent => ({ type: "hook.decided", data })));
        if (outcome.stop === "cancelled") return this.cancel();
        if (outcome.stop === "budget_exhausted") {
          return this.stop(
            "stopped",
            "budget_exhausted",
            `the tool-call budget (${this.limits.maxToolCalls}) is used up`,
          );
        }
        continue;
      }
      const last = this.state.lastReply;
      if (last && last.calls.length === 0) return this.finish(last.text);
      const next = await this.requestModel();
      if (next) return next;
    }
  }

  /**
   * The outcome of a call that started but never settled. Survivors of its process group are
   * killed first. A tool that can look the outcome up (reconcile) reports the real one;
   * otherwise it is unknown: never guessed, never replayed.
   */
  private async recover(started: EventData<"tool.started">): Promise<ToolResult> {
    const id = { call_id: started.call_id, name: started.name };
    let killed = 0;
    const supervision = this.options.processes;
    if (supervision) {
      for (const spawn of this.state.spawns.filter((s) => s.call_id === started.call_id)) {
        killed += await supervision.killSurvivors({
          pgid: spawn.pgid,
          bootId: spawn.boot_id,
          startTicks: spawn.start_ticks,
        });
      }
    }
    const note = killed > 0 ? ` ${killed} surviving process(es) of it were killed.` : "";
    const entry = this.options.snapshot.get(started.name);
    if (entry?.tool.reconcile && entry.tool.version === started.tool_version) {
      const parsed = entry.tool.input.safeParse(started.arguments);
      if (parsed.success) {
        try {
          const output = await entry.tool.reconcile(parsed.data, {
            callId: started.call_id,
            signal: this.signal,
            fs: this.options.fs,
            artifacts: this.options.artifacts,
            observedVersion: (path) => this.state.observed.get(path),
            ...(this.options.hostRoot !== undefined ? { hostRoot: this.options.hostRoot } : {}),
          });
          if (output) {
            const result = okResult(id, output, 0);
            result.summary = `reconciled after an interruption: ${output.summary}`;
            result.data = { ...output.data, reconciled: true };
            return result;
          }
        } catch {
          // A failed lookup proves nothing either way: fall through to unknown.
        }
      }
    }
    return errorResult(
      id,
      "UNKNOWN_OUTCOME",
      `${started.name} (call ${started.call_id}) started but its outcome was never recorded; it was not run again.${note}`,
      { data: { killed_processes: killed } },
    );
  }

  private async begin(): Promise<void> {
    const goal = this.options.goal;
    if (goal === undefined || goal.trim() === "")
      throw new EngineError("BAD_INPUT", "a new session needs a goal");
    const { snapshot, workspace, policy, provider, sessionId } = this.options;
    await this.record(
      {
        type: "session.started",
        data: {
          format_version: JOURNAL_FORMAT_VERSION,
          session_id: sessionId,
          harness_version: this.options.harnessVersion,
          workspace,
          goal,
          policy: policy.describe,
          policy_digest: policy.digest,
          provider: provider.identity,
          system_prompt_digest: digestOf(this.systemPrompt),
          tools: snapshot.entries.map((e) => ({
            name: e.tool.name,
            version: e.tool.version,
            effect: e.tool.effect,
          })),
          tools_digest: snapshot.digest,
          acceptance: this.options.acceptance.map((check) => check.name),
          ...(this.options.setup ? { options: this.options.setup } : {}),
          key_id: this.writer.keyId,
        },
      },
      { type: "user.input", data: { text: goal } },
    );
  }

  private checkIdentity(): void {
    const header = this.state.header!;
    const o = this.options;
    const differences: string[] = [];
    if (header.format_version !== JOURNAL_FORMAT_VERSION) differences.push("journal format version");
    if (header.workspace.fingerprint !== o.workspace.fingerprint) differences.push("workspace");
    if (header.session_id !== o.sessionId) differences.push("session id");
    if (o.goal !== undefined && o.goal !== header.goal) differences.push("goal");
    if (header.policy_digest !== o.policy.digest) differences.push("policy");
    if (digestOf(header.provider) !== digestOf(o.provider.identity)) differences.push("model provider");
    if (header.system_prompt_digest !== digestOf(this.systemPrompt)) differences.push("system prompt");
    if (header.tools_digest !== o.snapshot.digest) differences.push("tool set");
    if (differences.length > 0) {
      throw new EngineError(
        "IDENTITY_MISMATCH",
        `session "${o.sessionId}" was recorded with a different ${differences.join(", ")}; ` +
          "a changed task needs a new session (run again without --session, or with a new session id)",
      );
    }
  }

  /** One model step: request, decode completely, record. Returns a summary when the run ends. */
  private async requestModel(): Promise<RunSummary | undefined> {
    for (;;) {
      const attempt = this.state.retriesSinceReply;
      if (this.signal.aborted) return this.cancel();
      if (this.state.modelRequests >= this.limits.maxModelRequests) {
        return this.stop(
          "stopped",
          "budget_exhausted",
          `the model-request budget (${this.limits.maxModelRequests}) is used up`,
        );
      }
      const step = this.state.replies.length;
      const messages: ModelMessage[] = [
        { role: "system", content: this.systemPrompt },
        ...this.state.messages,
      ];
      const size = this.requestSize();
      if (size > this.limits.maxContextChars) {
        return this.stop(
          "stopped",
          "context_budget_exhausted",
          `the request would be ${size} characters, over the context budget of ${this.limits.maxContextChars}`,
        );
      }
      await this.record({
        type: "model.started",
        data: { step, attempt, tools_digest: this.options.snapshot.digest },
      });
      const stream = this.options.provider.stream(
        { messages, tools: this.options.snapshot.specs, step, attempt, ordinal: this.state.ordinal },
        this.signal,
      );
      const decoded = await decodeStream(stream, (event) => this.options.listener?.stream?.(event));
      if (this.signal.aborted) return this.cancel();
      if ("reply" in decoded) {
        const reused = this.reusedCallId(decoded.reply);
        if (reused) {
          await this.recordProtocolError(
            step,
            attempt,
            `tool call id "${reused}" was already used`,
            replyEvidence(decoded.reply),
          );
          return this.stop(
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
        return this.stop("stopped", "protocol_error", `${error.message}`);
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
      const delay = this.retryDelay(attempt, failure.retryAfterMs);
      if (
        failure.retryable &&
        attempt + 1 < this.limits.maxModelAttempts &&
        this.state.retryWaitSinceReply + delay <= this.limits.modelRetryMaxTotalMs
      ) {
        await this.record({
          type: "model.retryable_error",
          data: {
            step,
            attempt,
            code: failure.code,
            message: failureMessage,
            retry_in_ms: delay,
            ...details,
          },
        });
        await (this.options.sleep ?? sleep)(delay, this.signal);
        continue;
      }
      await this.record({
        type: "model.failed",
        data: { step, attempt, code: failure.code, message: failureMessage, ...details },
      });
      const why = failure.retryable ? `gave up after ${attempt + 1} attempts: ` : "";
      const advice = (this.options.providerAdvice ?? generalProviderAdvice)(failure.code);
      return this.stop(
        "stopped",
        "provider_error",
        `${why}${failure.code}: ${failureMessage}${advice === undefined ? "" : ` (what to do: ${advice})`}`,
      );
    }
  }

  /** The request's size in JSON characters: system prompt, messages and tool specs. */
  private requestSize(): number {
    this.specChars ??= JSON.stringify(this.options.snapshot.specs).length;
    return JSON.stringify(this.systemPrompt).length + this.state.messageChars + this.specChars;
  }

  private specChars: number | undefined;

  /** Exponential backoff with full jitter, or exactly what the server's Retry-After asked. */
  private retryDelay(attempt: number, retryAfterMs: number | undefined): number {
    return retryDelay({
      attempt,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
      baseMs: this.limits.modelRetryBaseMs,
      maxMs: this.limits.modelRetryMaxMs,
      jitter: this.options.random ?? Math.random,
    });
  }

  private reusedCallId(reply: Reply): string | undefined {
    const seen = new Set<string>();
    for (const call of reply.calls) {
      if (this.state.callIds.has(call.id) || seen.has(call.id)) return call.id;
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
      await this.record({ type: "model.reply", data: { step, ...reply } });
      return undefined;
    } catch (error) {
      if (!(error instanceof JournalError) || error.code !== "INVALID_EVENT") throw error;
    }
    const message = "the reply could not be recorded in the journal; nothing from it ran";
    await this.recordProtocolError(step, attempt, message, replyEvidence(reply));
    return this.stop("stopped", "protocol_error", message);
  }

  private async recordProtocolError(step: number, attempt: number, error: string, evidence: StreamEvidence) {
    await this.record({ type: "model.protocol_error", data: { step, attempt, error, evidence } });
  }

  private async finish(answer: string): Promise<RunSummary> {
    const pending = [...this.state.proposals.values()].filter(
      (p) => !this.state.appliedProposals.has(p.proposal_id),
    );
    if (this.options.proposals && pending.length > 0) {
      // Acceptance runs after a reviewer applies the proposals, never against an unchanged workspace.
      return this.stop(
        "needs_review",
        "proposals_pending",
        `${pending.length} proposed change(s) await review: harness diff ${this.options.sessionId}; harness apply ${this.options.sessionId}`,
      );
    }
    const checks = this.options.acceptance;
    if (checks.length === 0) {
      await this.record({ type: "run.finished", data: { status: "unverified", answer } });
      return this.summary();
    }
    const accepted = await this.runAcceptance();
    if (this.signal.aborted) return this.cancel();
    if (!accepted) {
      return this.stop("stopped", "acceptance_failed", "the model finished but the acceptance checks failed");
    }
    await this.record({ type: "run.finished", data: { status: "verified", answer } });
    return this.summary();
  }

  /** A finished session is judged by the workspace as it is now, not by its old success. */
  private async recheckFinished(): Promise<RunSummary> {
    const outcome = this.state.outcome;
    const answer = outcome?.kind === "finished" ? outcome.data.answer : "";
    if (this.options.acceptance.length === 0) return this.summary();
    const accepted = await this.runAcceptance();
    if (this.signal.aborted) return this.cancel();
    if (!accepted) {
      return this.stop(
        "stopped",
        "acceptance_failed",
        "the recorded completion no longer holds: acceptance failed now",
      );
    }
    await this.record({ type: "run.finished", data: { status: "verified", answer } });
    return this.summary();
  }

  private async runAcceptance(): Promise<boolean> {
    const results = [];
    for (const check of this.options.acceptance) results.push(await check.run(this.signal));
    const accepted = results.every((r) => r.passed);
    await this.record({ type: "acceptance.checked", data: { accepted, checks: results } });
    return accepted;
  }

  private async stop(
    status: "stopped" | "review_required" | "needs_review",
    reason: string,
    message: string,
  ) {
    await this.record({ type: "run.stopped", data: { status, reason, message } });
    return this.summary();
  }

  private async cancel(): Promise<RunSummary> {
    await this.record({ type: "run.cancelled", data: { reason: "interrupted by signal" } });
    return this.summary();
  }

  private summary(): RunSummary {
    const state = this.state;
    const outcome = state.outcome;
    const base = {
      session: this.options.sessionId,
      events: state.records,
      model_requests: state.modelRequests,
      tool_calls: state.toolCalls,
      usage: state.usage,
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
        };
      case "cancelled":
        return {
          ...base,
          status: "cancelled",
          reason: "cancelled",
          message: outcome.data.reason,
          answer: null,
        };
    }
  }

  private async record(...events: AnyNewEvent[]): Promise<void> {
    const records = await this.writer.append(events);
    for (const record of records) {
      this.state.apply(record);
      this.options.listener?.record?.(record);
    }
  }

  private createRuntime(): ToolRuntime {
    const o = this.options;
    const grants = o.grants ?? new SessionGrantPort();
    return new ToolRuntime({
      sessionId: o.sessionId,
      snapshot: o.snapshot,
      fs: o.fs,
      ...(o.hostRoot !== undefined ? { hostRoot: o.hostRoot } : {}),
      artifacts: o.artifacts,
      permissions: o.policy.permissions,
      approver: o.approver,
      grants,
      ...(o.hooks ? { hooks: o.hooks } : {}),
      observedVersion: (path) => this.state.observed.get(path),
      history: () => this.state.history,
      ...(o.proposals ? { proposals: o.proposals(proposalRecords(this.state)) } : {}),
      previewLimitBytes: this.limits.previewLimitBytes,
      poolSize: this.limits.poolSize,
      retry: o.runtime?.retry ?? { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 1000 },
      settleGraceMs: o.runtime?.settleGraceMs ?? 10_000,
      ...(o.runtime?.timeoutFor ? { timeoutFor: o.runtime.timeoutFor } : {}),
      ...(o.listener ? { progress: o.listener } : {}),
      ...(o.sleep ? { sleep: o.sleep } : {}),
      ...(o.random ? { random: o.random } : {}),
    });
  }
}

/** Pending proposals: recorded and not yet applied (an applied one is the workspace now). */
function proposalRecords(state: SessionState): ProposalRecord[] {
  return [...state.proposals.values()]
    .filter((p) => !state.appliedProposals.has(p.proposal_id))
    .map(({ call_id: _call, ...record }) => record);
}

function errorName(error: unknown): string {
  return error instanceof Error ? toWellFormed(String(error.name).slice(0, 40)) : "error";
}

function hasEvidence(evidence: StreamEvidence): boolean {
  return evidence.events > 0;
}
