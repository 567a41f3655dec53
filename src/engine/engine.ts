import type { JournalWriter } from "../journal/store.js";
import { type AnyNewEvent, type AnyRecord, JOURNAL_FORMAT_VERSION } from "../journal/vocabulary.js";
import { SessionGrants } from "../policy/grants.js";
import { subjectKindOf } from "../policy/subject-kind.js";
import {
  type ContextBudget,
  defaultReplyReserve,
  resolveContextBudget,
} from "../providers/context-window.js";
import { readAccess } from "../runtime/authorize.js";
import { DEFAULT_RETRY, DEFAULT_SETTLE_GRACE_MS } from "../runtime/environment.js";
import { ToolRuntime } from "../runtime/pipeline.js";
import type { ApprovalPort, GrantPort, ProposalRecord } from "../runtime/ports.js";
import type { ToolSnapshot } from "../runtime/registry.js";
import type { EffectsJournal } from "../runtime/workspace-effects.js";
import { digestOf } from "../shared/hash.js";
import type { CatalogPort } from "../tools/tool.js";
import { runUndo } from "../undo/apply.js";
import { unfinishedUndo } from "../undo/plan.js";
import { endTurnBackground, settleBackground } from "./background.js";
import { compactionCut } from "./compaction.js";
import { delegationPort } from "./delegation.js";
import { EngineError } from "./errors.js";
import { CONTINUE, finish, recheckFinished } from "./finish.js";
import { restoreGrants } from "./grants-restore.js";
import {
  changedInstructions,
  type InstructionFile,
  NestedInstructions,
  startInstructionFiles,
} from "./instructions.js";
import { ModelStep } from "./model-step.js";
import { DEFAULT_LIMITS, type EngineOptions, type Limits, type RunSummary } from "./options.js";
import { cancel, type EngineRun, stop, summary } from "./outcome.js";
import { recoverOrphans, settleServices } from "./recovery.js";
import { activationsDue, SkillNarrowing } from "./skills.js";
import { SessionState } from "./state.js";
import { Steering } from "./steering.js";
import { SYSTEM_PROMPT } from "./system-prompt.js";
import { taskFrame } from "./task-frame.js";
import { type Offer, ToolOffer } from "./tool-offer.js";
import { startUnavailable, toolDigests, toolsChanged } from "./tool-surface.js";
import { beginTurn, checkInput, inputRecords } from "./turns.js";

/**
 * Runs one session: start or resume, recover what a crash left, then alternate model requests
 * and tool execution until the model stops calling tools, and decide the outcome from the
 * host's own acceptance checks. The journal is written before every step that depends on it.
 */
export class Engine {
  private readonly limits: Limits;
  private readonly budget: ContextBudget;
  private readonly systemPrompt: string;
  private readonly signal: AbortSignal;
  /** Fires the run's signal when the user interrupts the turn (as opposed to the embedder's signal). */
  private readonly interruption = new AbortController();
  private interruptRequested = false;
  private readonly steering = new Steering(() => this.session);
  private writer!: JournalWriter;
  private state!: SessionState;
  private session!: EngineRun;
  /** The session's tools, the surface (replaced when it changes at a step boundary). */
  private tools: ToolSnapshot;
  /** With tools deferred: what of the surface the model is offered, given the journal's loads. */
  private readonly offers: ToolOffer | undefined;
  /**
   * Approvals "for this session": the runtime's, and what nested instructions are read under. On
   * resume the engine grants again what the journal's session approvals granted (`restoreGrants`).
   */
  private grants!: GrantPort;

  /**
   * Whether an AGENTS.md in the workspace may be sent: only where read_file could read it without
   * asking. The root file comes from the repository like any other, so a root `AGENTS.md` that is
   * a symlink to `.env` is held to the same deny rules as reading `.env` itself.
   */
  private readonly readable = async (path: string): Promise<boolean> =>
    (await readAccess(path, { permissions: this.options.policy.permissions, grants: this.grants })) ===
    "allowed";

  constructor(private readonly options: EngineOptions) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.budget = contextBudgetOf(this.limits, options.provider.identity.model);
    this.systemPrompt = options.systemPrompt ?? SYSTEM_PROMPT;
    this.signal = AbortSignal.any([...(options.signal ? [options.signal] : []), this.interruption.signal]);
    this.tools = options.runtime.snapshot;
    this.grants = options.runtime.grants ?? new SessionGrants();
    const permissions = options.policy.permissions;
    this.offers =
      options.deferTools === undefined
        ? undefined
        : new ToolOffer(
            options.deferTools,
            this.budget.window,
            (name) => permissions.deniesOutright?.(name) ?? false,
          );
  }

  /** What the model is offered for the current surface and the loads the journal holds. */
  private offer(): Offer | undefined {
    return this.offers?.offer(this.tools, this.state.loadedTools);
  }

  private offered(): ToolSnapshot {
    return this.offer()?.snapshot ?? this.tools;
  }

  /**
   * `tool_search`: rank the discoverable catalog and load the matches not loaded with their current
   * definition, journaled (durably, before the search's result) as `tools.loaded`.
   */
  private catalogPort(offers: ToolOffer): CatalogPort {
    return {
      search: async (query, limit, callId) => {
        const surface = this.tools;
        const tools = offers.search(surface, query, limit);
        const digests = offers.digests(surface);
        const loaded = new Map(this.state.loadedTools.map((entry) => [entry.name, entry.digest]));
        const names = tools.map((tool) => tool.name).filter((name) => loaded.get(name) !== digests.get(name));
        if (names.length > 0) {
          const data = { names, digests: names.map((name) => digests.get(name) as string), call_id: callId };
          await this.record({ type: "tools.loaded", data });
        }
        return { tools, loaded: names };
      },
    };
  }

  async run(): Promise<RunSummary> {
    const { store, sessionId, mode } = this.options;
    checkInput(this.options.input);
    const exists = await store.exists(sessionId);
    if (mode === "resume" && !exists) {
      throw new EngineError(
        "SESSION_NOT_FOUND",
        `no session "${sessionId}" in this workspace (see: harness sessions)`,
      );
    }
    // A lock whose owner is provably gone is taken over and journaled below; a live or
    // unverifiable owner still refuses.
    this.writer = await store.openWriter(sessionId, { create: mode !== "resume", recoverStaleLock: true });
    this.options.processes?.journal.attach((event) => this.record(event));
    this.options.processes?.untrusted?.attach({
      untrusted: () => this.state.turnUntrusted,
      contacted: (target) => this.state.contacted.has(target),
    });
    try {
      // The fold is what the run keeps; the records it was read from are dropped with this call.
      this.state = SessionState.from(await this.writer.readAll());
      // Before anything is decided (the start instructions are read under them too).
      await restoreGrants(this.grants, this.state.sessionApprovals, this.tools);
      this.session = {
        options: this.options,
        limits: this.limits,
        budget: this.budget,
        systemPrompt: this.systemPrompt,
        signal: this.signal,
        state: this.state,
        tools: () => this.tools,
        offered: () => this.offered(),
        catalog: () => (this.offers && this.offer()?.deferred ? this.catalogPort(this.offers) : undefined),
        record: (...events) => this.record(...events),
        interrupted: () => this.interruptRequested,
        defer: (...events) => this.defer(...events),
        records: () => this.writer.readAll(),
        nestedCalls: (parent, prefix) =>
          this.createRuntime().subCalls(
            { id: parent.call_id, batch: parent.batch },
            prefix,
            { recorder: { record: (events) => this.record(...events) } },
            { remaining: Math.max(0, this.limits.maxToolCalls - this.state.turnToolCalls) },
          ),
      };
      const recovered = this.writer.recoveredLock;
      const resuming = this.state.header !== undefined;
      const instructions =
        this.options.instructions === undefined
          ? undefined
          : await startInstructionFiles(this.options.instructions, this.options.runtime.fs, this.readable);
      if (this.options.compactOnly) refuseCompaction(this.state, sessionId);
      if (this.options.userCommand && !resuming)
        throw new EngineError("SESSION_NOT_FOUND", `session "${sessionId}" has no records yet`);
      if (!resuming) {
        await this.begin(instructions);
      } else {
        this.checkIdentity(instructions);
        await this.recordModelSwitch();
        if (this.state.toolsDigest !== this.tools.digest) await this.recordSurface(this.tools, "resume");
      }
      await settleServices(this.session);
      await settleBackground(this.session);
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
      if (this.options.compactOnly) return await this.compactNow(this.options.compactOnly.instructions);
      if (this.options.userCommand) return await this.userCommandNow(this.options.userCommand);
      if (resuming) await this.record({ type: "session.resumed", data: { pid: process.pid } });
      if (resuming) await this.finishInterruptedUndo();
      // The workspace as the session starts from it (before the first request), or as its journal left it.
      await this.options.runtime.effects?.start(await this.writer.readAll(), this.effectsJournal());
      return await this.drive(resuming);
    } finally {
      // Processes kept only for the turn end with it, journaled while the writer is still open.
      if (this.session !== undefined)
        await endTurnBackground(
          this.session,
          this.interruptRequested || this.signal.aborted,
          this.effectsJournal(),
        ).catch(() => undefined);
      this.options.runtime.effects?.close();
      this.options.processes?.journal.attach(undefined);
      this.options.processes?.untrusted?.attach(undefined);
      // Whatever is still deferred (a run that ended by an exception) is written and shown.
      if (this.undisclosed.length > 0) await this.record().catch(() => undefined);
      await this.writer.close();
    }
  }

  /**
   * The checks a resume makes before anything runs, without running or journaling anything: the
   * session exists, has records, is not running (its writer lock is free), its journal is
   * trusted, and its workspace, goal, policy, model, system prompt, tools and start instructions
   * are this engine's (IDENTITY_MISMATCH otherwise). For an embedder that switches to a session
   * before its next turn (the chat's /sessions ID), so a refusal comes at once, not at that turn.
   */
  async checkResume(): Promise<void> {
    const { store, sessionId } = this.options;
    if (!(await store.exists(sessionId)))
      throw new EngineError(
        "SESSION_NOT_FOUND",
        `no session "${sessionId}" in this workspace (see: harness sessions)`,
      );
    this.writer = await store.openWriter(sessionId, { create: false });
    try {
      this.state = SessionState.from(await this.writer.readAll());
      await restoreGrants(this.grants, this.state.sessionApprovals, this.tools);
      if (this.state.header === undefined)
        throw new EngineError(
          "BAD_INPUT",
          `session "${sessionId}" has no records (it was interrupted before it started)`,
        );
      const instructions =
        this.options.instructions === undefined
          ? undefined
          : await startInstructionFiles(this.options.instructions, this.options.runtime.fs, this.readable);
      this.checkIdentity(instructions);
    } finally {
      await this.writer.close();
    }
  }

  /**
   * Steer the running turn: journaled now, sent to the model at the next step boundary (after the
   * current reply's calls have their results, before the next request). Rejected (BAD_INPUT) when
   * no turn is running or it is already ending: then the text belongs in the next turn's `input`.
   */
  steer(text: string): Promise<void> {
    return this.steering.steer(text);
  }

  /**
   * Stop the turn at the next safe point: a model request is abandoned, running tools are cancelled
   * (their process trees killed) and recorded, calls not yet started are recorded as cancelled;
   * `run()` then resolves with status "interrupted" and the session waits for the next input.
   */
  interrupt(): void {
    this.interruptRequested = true;
    this.interruption.abort(new Error("interrupted by the user"));
  }

  /**
   * For an immediate exit (a second Ctrl-C): synchronously kill the process groups of calls still
   * running and release the writer lock. Every append is whole (closing writes what was staged), so
   * the journal stays consistent; the interrupted calls are reported unknown on resume.
   */
  exitNow(): void {
    if (!this.writer || !this.state) return;
    for (const spawn of this.state.spawns) {
      if (this.state.spawnSettled(spawn.call_id)) continue;
      try {
        process.kill(-spawn.pgid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    void this.writer.close();
  }

  /** harness compact: one summary request now; the session stays stopped. */
  private async compactNow(instructions: string | undefined): Promise<RunSummary> {
    const outcome = await new ModelStep(this.session).compactNow(instructions);
    if (outcome.kind === "failed") return outcome.summary;
    if (outcome.kind === "impossible") throw new EngineError("BAD_INPUT", `cannot compact: ${outcome.why}`);
    const { kind: _kind, ...compacted } = outcome;
    return { ...summary(this.session), compacted };
  }

  /**
   * The person's `!command`: `user.command` names the call theirs, then it runs as a model's
   * `shell` call would (runtime pipeline: policy, sandbox, environment filter, scrubbing,
   * workspace recording), except that their typing it answers an `ask`. Nothing goes to the model.
   */
  private async userCommandNow(command: { command: string; share: boolean }): Promise<RunSummary> {
    const callId = `user:${this.state.userCommands.size + 1}`;
    await this.record({ type: "user.command", data: { call_id: callId, ...command } });
    await this.options.runtime.effects?.start(await this.writer.readAll(), this.effectsJournal());
    const runtime = this.createRuntime(userApprover);
    await runtime.runCalls({
      calls: [{ id: callId, name: "shell", arguments: { command: command.command } }],
      remainingToolCalls: 1,
      signal: this.signal,
      recorder: { record: (events) => this.record(...events), defer: (events) => this.defer(...events) },
      firstBatchId: this.state.batches,
    });
    const hookRecords = runtime.drainHookRecords();
    if (hookRecords.length > 0)
      await this.record(...hookRecords.map((data): AnyNewEvent => ({ type: "hook.decided", data })));
    const result = this.state.results.get(callId);
    const base = summary(this.session);
    if (result === undefined) return base;
    const { status, summary: said, content, duration_ms } = result;
    return { ...base, command: { call_id: callId, status, summary: said, content, duration_ms } };
  }

  private async drive(resuming: boolean): Promise<RunSummary> {
    this.steering.openGate();
    try {
      return await this.turn(resuming);
    } finally {
      this.steering.closeGate();
    }
  }

  private async turn(resuming: boolean): Promise<RunSummary> {
    const run = this.session;
    const recovered = await recoverOrphans(run);
    if (recovered) return recovered;
    if (resuming && this.options.input !== undefined)
      await beginTurn(run, this.options.input, this.options.attachments);
    else if (this.state.outcome?.kind === "finished") return recheckFinished(run);
    // What changed since the journal last looked (a person, another process, a call lost in a crash).
    if (resuming) await this.options.runtime.effects?.outside(this.effectsJournal(), { full: true });

    const model = new ModelStep(run);
    let runtime = this.createRuntime();
    const nested = new NestedInstructions(this.options.runtime.fs, this.readable);
    for (;;) {
      if (this.signal.aborted) return cancel(run);
      // Sessions recorded before instructions were keep sending what they always did.
      if (this.state.startInstructions !== undefined) {
        const loaded = await nested.check(this.state);
        if (loaded) await this.record({ type: "instructions.loaded", data: loaded });
      }
      const skills = activationsDue(this.state.history, this.state.activatedSkillCalls);
      if (skills.length > 0)
        await this.record(...skills.map((data): AnyNewEvent => ({ type: "skill.activated", data })));
      const pending = this.state.pendingCalls();
      if (pending.length > 0) {
        // Loads since the runtime was built: calls are looked up in what the model is offered now.
        if (runtime.offered !== this.offered()) runtime = this.createRuntime();
        const outcome = await runtime.runCalls({
          calls: pending,
          remainingToolCalls: this.limits.maxToolCalls - this.state.turnToolCalls,
          signal: this.signal,
          recorder: { record: (events) => this.record(...events), defer: (events) => this.defer(...events) },
          firstBatchId: this.state.batches,
        });
        const hookRecords = runtime.drainHookRecords();
        if (hookRecords.length > 0)
          await this.defer(...hookRecords.map((data): AnyNewEvent => ({ type: "hook.decided", data })));
        if (outcome.stop === "cancelled") return cancel(run);
        // A call whose outcome cannot be known (a tool lost its server mid-call, say) is never
        // guessed or repeated: the session stops for a person, as after a crash.
        if (this.state.hasUnknownOutcome()) {
          return stop(
            run,
            "review_required",
            "unknown_outcome",
            "a tool call's outcome is unknown; inspect the workspace",
          );
        }
        if (outcome.stop === "budget_exhausted") {
          return stop(
            run,
            "stopped",
            "budget_exhausted",
            `the tool-call budget (${this.limits.maxToolCalls}) is used up`,
          );
        }
        continue;
      }
      // Steering typed meanwhile goes to the model now, before the next request (or instead of ending).
      if (await this.steering.deliver(run)) continue;
      const last = this.state.lastReply;
      if (last && last.calls.length === 0 && !this.state.replyPending) {
        // Steers from here on belong to the next turn; one typed just before the gate closed is delivered.
        this.steering.closeGate();
        if (await this.steering.deliver(run)) {
          this.steering.openGate();
          continue;
        }
        const finished = await finish(run, last.text);
        if (finished !== CONTINUE) return finished;
        this.steering.openGate();
        continue;
      }
      // Between steps, never while calls run: a tool list that changed is taken up here.
      const surface = await this.options.toolSurface?.refresh(this.tools, this.signal);
      if (surface !== undefined && surface.digest !== this.tools.digest) {
        await this.recordSurface(surface, "refresh");
        runtime = this.createRuntime();
      }
      const next = await model.next();
      if (next) return next;
    }
  }

  private async begin(instructions: InstructionFile[] | undefined): Promise<void> {
    const goal = this.options.goal ?? this.options.input;
    if (goal === undefined || goal.trim() === "")
      throw new EngineError("BAD_INPUT", "a new session needs a goal");
    const { runtime, workspace, policy, provider, sessionId } = this.options;
    const snapshot = runtime.snapshot;
    const digests = toolDigests(snapshot);
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
            digest: digests.get(e.tool.name) as string,
          })),
          tools_digest: snapshot.digest,
          ...startUnavailable(this.options.toolSurface?.unavailable?.()),
          acceptance: this.options.acceptance.map((check) => check.name),
          ...(this.options.setup ? { options: this.options.setup } : {}),
          key_id: this.writer.keyId,
          ...(this.options.environment
            ? {
                environment: {
                  ...this.options.environment,
                  task: taskFrame(
                    this.options.acceptance.map((check) => check.name),
                    policy.describe,
                  ),
                },
              }
            : {}),
        },
      },
      ...(await inputRecords(this.options.runtime.artifacts, goal, 1, this.options.attachments)),
      ...(instructions
        ? [{ type: "instructions.loaded", data: { trigger: "start", files: instructions } } as const]
        : []),
    );
  }

  private checkIdentity(instructions: InstructionFile[] | undefined): void {
    const header = this.state.header!;
    const o = this.options;
    const differences: string[] = [];
    if (header.format_version !== JOURNAL_FORMAT_VERSION) differences.push("journal format version");
    // A fork materialized into its own directory continues there (session.forked names it).
    const workspace = this.state.forkedFrom?.workspace ?? header.workspace;
    if (workspace.fingerprint !== o.workspace.fingerprint) differences.push("workspace");
    // A fork's history names its parent's id: the fork record says so.
    const recordedId = this.state.forkedFrom?.parent === header.session_id ? o.sessionId : header.session_id;
    if (recordedId !== o.sessionId) differences.push("session id");
    if (o.goal !== undefined && o.goal !== header.goal) differences.push("goal");
    if (header.policy_digest !== o.policy.digest) differences.push("policy");
    // Against the model the session last recorded: its start, or the latest model.switched.
    if (this.modelChanged() && !o.switchModel) differences.push("model provider");
    if (header.system_prompt_digest !== digestOf(this.systemPrompt)) differences.push("system prompt");
    // Against the surface the session last recorded: its start, or the latest tools.changed.
    const toolsChanged = this.state.toolsDigest !== this.tools.digest;
    if (toolsChanged && !o.acceptToolChanges) differences.push("tool set");
    // Instructions are part of the identity from the sessions that recorded them on.
    const recorded = this.state.startInstructions;
    const changed =
      recorded !== undefined && instructions !== undefined ? changedInstructions(recorded, instructions) : [];
    differences.push(...changed);
    if (differences.length > 0) {
      throw new EngineError(
        "IDENTITY_MISMATCH",
        `session "${o.sessionId}" was recorded with a different ${differences.join(", ")}; ` +
          "a changed task needs a new session (run again without --session, or with a new session id)" +
          (differences.includes("tool set")
            ? "; if only the tools changed (an MCP server's tool list), --accept-tool-changes continues with the new ones"
            : "") +
          (changed.length > 0
            ? "; or restore the instructions the session was recorded with (see: harness inspect)"
            : ""),
      );
    }
  }

  private modelChanged(): boolean {
    return digestOf(this.state.provider ?? {}) !== digestOf(this.options.provider.identity);
  }

  /** A switch the person asked for (`switchModel`), journaled before anything goes to the new model. */
  /**
   * An undo of this session that a killed harness left between `undo.started` and
   * `undo.finished` is finished before the session goes on (exactly once: the plan is journaled,
   * and a file already at its restore entry counts as done), so the next turn starts from the
   * tree the undo promised rather than a half-restored one.
   */
  private async finishInterruptedUndo(): Promise<void> {
    const root = this.options.runtime.hostRoot;
    if (root === undefined) return;
    const records = await this.writer.readAll();
    if (unfinishedUndo(records) === undefined) return;
    const effects = this.options.runtime.effects;
    await runUndo({
      root,
      writer: { readAll: async () => records, append: (events) => this.record(...events) },
      artifacts: this.options.runtime.artifacts,
      ...(effects ? { kept: (hash: string) => effects.kept(hash) } : {}),
      target: { kind: "last-turn" },
      dryRun: false,
    });
  }

  private async recordModelSwitch(): Promise<void> {
    if (!this.options.switchModel || !this.modelChanged()) return;
    await this.record({
      type: "model.switched",
      data: {
        from: this.state.provider ?? {},
        to: this.options.provider.identity,
        options: this.options.setup ?? {},
      },
    });
  }

  /** Offer `next` from now on, journaled first (the whole new surface and what changed). */
  private async recordSurface(next: ToolSnapshot, reason: "refresh" | "resume"): Promise<void> {
    const data = toolsChanged(
      this.state.surface,
      this.state.toolsDigest ?? "",
      next,
      this.state.replyCount,
      reason,
      this.options.toolSurface?.unavailable?.(),
    );
    await this.record({ type: "tools.changed", data });
    this.tools = next;
  }

  /** Where workspace records are journaled: durably, and named by the seq they will get. */
  private effectsJournal(): EffectsJournal {
    return { record: (events) => this.record(...events), nextSeq: () => this.state.records };
  }

  /** Durable append: it also writes what was deferred, and only now shows those records to the listener. */
  private async record(...events: AnyNewEvent[]): Promise<void> {
    const records = await this.writer.append(events);
    for (const record of records) this.state.apply(record);
    const shown = this.undisclosed.length > 0 ? [...this.undisclosed.splice(0), ...records] : records;
    for (const record of shown) this.options.listener?.record?.(record);
  }

  /**
   * Append records that may wait for the next durable append (docs/architecture.md, "What may
   * wait for the next fsync"). The state takes them at once, so the next request is built from
   * them; nothing outside the process (listener, MCP client, --events) sees them before they are durable.
   */
  private async defer(...events: AnyNewEvent[]): Promise<void> {
    const records = await this.writer.append(events, { durable: false });
    for (const record of records) this.state.apply(record);
    this.undisclosed.push(...records);
  }

  /** Deferred records the listener has not been shown, because they are not durable yet. */
  private readonly undisclosed: AnyRecord[] = [];

  private createRuntime(approver?: ApprovalPort): ToolRuntime {
    const o = this.options;
    const offer = this.offer();
    // The environment passes through whole; the engine adds what the session owns.
    return new ToolRuntime({
      ...o.runtime,
      ...(approver ? { approver } : {}),
      snapshot: offer?.snapshot ?? this.tools,
      ...(offer?.deferred && this.offers
        ? { notOffered: (name: string) => offer.notOffered(name), catalog: this.catalogPort(this.offers) }
        : {}),
      grants: this.grants,
      retry: o.runtime.retry ?? DEFAULT_RETRY,
      settleGraceMs: o.runtime.settleGraceMs ?? DEFAULT_SETTLE_GRACE_MS,
      sessionId: o.sessionId,
      // While a skill is active its allowed-tools narrow the session's decisions (never widen them).
      permissions: new SkillNarrowing(
        o.policy.permissions,
        () => this.state.activeSkills,
        (name) => {
          const entry = this.tools.get(name);
          return entry ? subjectKindOf(entry.tool) : undefined;
        },
      ),
      observedVersion: (path) => this.state.observed.get(path),
      history: () => this.state.history,
      untrusted: () => this.state.turnUntrusted,
      ...(o.proposals ? { proposals: o.proposals(proposalRecords(this.state)) } : {}),
      previewLimitBytes: this.limits.previewLimitBytes,
      poolSize: this.limits.poolSize,
      ...(o.listener ? { progress: o.listener } : {}),
      ...(o.sleep ? { sleep: o.sleep } : {}),
      ...(o.random ? { random: o.random } : {}),
      nextSeq: () => this.state.records,
      delegation: delegationPort(this.session),
    });
  }
}

/**
 * Who answers an `ask` for the person's own command: they did, by typing it (journaled as
 * approval.decided by "user", once). A deny rule never reaches an approver.
 */
const userApprover: ApprovalPort = {
  request: async () => ({ decision: "allow", scope: "once", by: "user", reason: "typed by the user" }),
};

/** Checked before anything is appended: a compaction needs a stopped session with older turns. */
function refuseCompaction(state: SessionState, sessionId: string): void {
  if (state.header === undefined)
    throw new EngineError("SESSION_NOT_FOUND", `session "${sessionId}" has no records to compact`);
  if (compactionCut(state) === undefined) {
    throw new EngineError(
      "BAD_INPUT",
      `session "${sessionId}" has nothing older than its current step to summarize (it needs at least two model replies)`,
    );
  }
}

/** Pending proposals: recorded and not yet applied (an applied one is the workspace now). */
function proposalRecords(state: SessionState): ProposalRecord[] {
  return [...state.proposals.values()]
    .filter((p) => !state.appliedProposals.has(p.proposal_id))
    .map(({ call_id: _call, ...record }) => record);
}

/** The limits' window and reserve, else the table's window for the provider's model. */
function contextBudgetOf(limits: Limits, model: unknown): ContextBudget {
  const budget = resolveContextBudget({
    flag: limits.contextWindowTokens,
    model: typeof model === "string" ? model : undefined,
  });
  const reserve = limits.replyReserveTokens ?? defaultReplyReserve(budget.window, undefined);
  if (reserve >= budget.window) {
    throw new EngineError(
      "BAD_INPUT",
      `the reply reserve (${reserve}) must be smaller than the context window (${budget.window} tokens)`,
    );
  }
  return { ...budget, reserve };
}
