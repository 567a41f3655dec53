import type { ToolCall } from "../protocol/types.js";
import { createToolContext } from "../tools/context.js";
import type { SubCallPort } from "../tools/tool.js";
import { authorize, readAccess } from "./authorize.js";
import { runBatch } from "./batch.js";
import { OrderedCommitter } from "./commit.js";
import { Deadlines } from "./deadlines.js";
import type { RuntimeOptions } from "./environment.js";
import { type Execution, executeWithRetries } from "./execute.js";
import { HookLog } from "./hook-log.js";
import { asProposal, normalize } from "./normalize.js";
import { deferRecord, type HookRecord, type ProgressListener, type Recorder } from "./ports.js";
import { type Prepared, prepare } from "./prepare.js";
import type { ToolSnapshot } from "./registry.js";
import { errorResult, identity, type ToolResult } from "./result.js";
import { planBatches } from "./scheduler.js";
import { subCallPort } from "./sub-calls.js";
import type { FoundChange } from "./workspace-effects.js";

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

/**
 * The tool-call pipeline, one stage per module: lookup and validation (prepare.ts) →
 * permission, approval and admit hooks (authorize) → scheduling (scheduler.ts) → durable intent
 * and the worker pool (batch.ts) → execution with timeouts, cancellation, wrap hooks and retries
 * (execute.ts) → normalization (normalize.ts) → ordered commit (commit.ts). Every call ends in
 * exactly one committed result, paired with its call id; failures are results for the model,
 * never exceptions.
 */
export class ToolRuntime {
  private readonly hooks: HookLog;
  private readonly execution: Execution;

  /** The tools this runtime looks calls up in (what the model was offered when it was built). */
  get offered(): ToolSnapshot {
    return this.options.snapshot;
  }

  constructor(private readonly options: RuntimeOptions) {
    const effects = options.effects;
    this.hooks = new HookLog(
      options.sessionId,
      options.hooks,
      effects && { effects, nextSeq: () => options.nextSeq?.() ?? 0 },
    );
    this.execution = {
      options,
      hooks: this.hooks,
      deadlines: new Deadlines(),
      context: (prepared, signal) =>
        createToolContext({
          // A write into a proposal overlay changes nothing on disk: nothing to record.
          ...(options.effects && !prepared.overlay
            ? { workspaceChanged: (change) => this.toolChanged(prepared, change) }
            : {}),
          callId: prepared.call.id,
          signal,
          fs: prepared.overlay?.fs ?? options.fs,
          artifacts: options.artifacts,
          observedVersion: (path) => options.observedVersion(path),
          hostRoot: options.hostRoot,
          readAccess: (path, access) => readAccess(path, this.options, access),
          artifactSources: (artifactId) => this.artifactSources(artifactId),
          ...liveOutput(prepared.call.id, options.progress),
          ...traceContext(prepared.call.id, options.progress),
          ...(options.delegation && prepared.entry.tool.delegates ? { delegation: options.delegation } : {}),
          ...(prepared.entry.tool.nests ? this.nestedCalls(prepared) : {}),
          ...(options.catalog && prepared.entry.tool.catalogs ? { catalog: options.catalog } : {}),
        }),
    };
  }

  async runCalls(given: RunCallsInput): Promise<RunCallsOutcome> {
    const input: RunCallsInput = { ...given, recorder: this.hooks.journaling(given.recorder) };
    // A hook is a party outside the journal: it sees a call only once the reply holding it is
    // durable (without hooks, the batch's tool.started carries the deferred reply).
    if (this.options.hooks !== undefined) await given.recorder.record([]);
    const prepared: Prepared[] = [];
    const decided: (ToolResult | undefined)[] = [];
    for (const [index, call] of input.calls.entries()) {
      const preparation = await prepare(
        index,
        call,
        this.options.snapshot,
        this.hooks,
        this.options.notOffered,
      );
      decided.push(preparation.kind === "done" ? preparation.result : undefined);
      if (preparation.kind === "run") prepared.push(preparation.prepared);
    }
    const committer = new OrderedCommitter(decided, input.recorder, this.options.progress);
    const batches = planBatches(prepared);
    // Shared with the calls a program makes inside one of these (`batch`): they spend it too.
    const budget = { remaining: input.remainingToolCalls };
    let stop: RunCallsOutcome["stop"];
    let batchId = input.firstBatchId;

    await committer.flush();
    for (const batch of batches) {
      // Authorization happens batch by batch, in call order, and only for calls the budget will
      // let start: nobody is asked to approve a call that cannot run.
      const authorized: Prepared[] = [];
      for (const call of batch) {
        if (input.signal.aborted) break;
        if (budget.remaining - authorized.length <= 0) {
          stop = "budget_exhausted";
          break;
        }
        const denial = await this.authorize(call, input.recorder, input.signal);
        if (denial) committer.settle(call.index, denial);
        else authorized.push(call);
      }
      if (input.signal.aborted) {
        stop = "cancelled";
        break;
      }
      if (authorized.length > 0) {
        budget.remaining -= authorized.length;
        const id = batchId;
        await runBatch({
          batch: authorized,
          batchId: id,
          recorder: input.recorder,
          committer,
          poolSize: this.options.poolSize,
          progress: this.options.progress,
          run: (call, queueWaitMs) => this.runCall(call, id, queueWaitMs, input, budget),
        });
        batchId += 1;
      } else {
        await committer.flush();
      }
      if (stop === "budget_exhausted") break;
    }

    if (stop === "cancelled" || input.signal.aborted) {
      stop = "cancelled";
      // Never-started calls get a cancelled result so the transcript stays paired.
      for (const call of prepared) {
        if (!committer.isDone(call.index)) {
          committer.complete(
            call.index,
            errorResult(identity(call.call), "CANCELLED", "The run was cancelled before this call started.", {
              data: { started: false },
              operationApplied: false,
            }),
          );
        }
      }
    }
    await committer.flush();
    const outcome: RunCallsOutcome = { committed: committer.committed };
    if (stop !== undefined) outcome.stop = stop;
    return outcome;
  }

  /** The authorization stage (authorize.ts). Returns a denial or nothing. */
  private async authorize(
    prepared: Prepared,
    recorder: Recorder,
    signal: AbortSignal,
  ): Promise<ToolResult | undefined> {
    const { call, entry } = prepared;
    const display = entry.tool.approvalDetails?.(prepared.args);
    const authorization = await authorize(
      {
        id: call.id,
        name: call.name,
        effect: entry.tool.effect,
        arguments: call.arguments,
        ...(display === undefined ? {} : { display }),
      },
      // The hooks as compared around (hook-log.ts), not as given.
      { ...this.options, hooks: this.hooks.hooks, proposals: this.options.proposals !== undefined },
      {
        recorder,
        signal,
        hookContext: () => this.hooks.context(call, entry),
        hookRecords: async (records, now) => {
          if (now) await this.hooks.recordNow(records, recorder);
          else this.hooks.keep(records);
        },
      },
    );
    if (authorization.outcome === "deny") return authorization.denial;
    prepared.permission = authorization.permission;
    return undefined;
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

  /** Calls running now that may nest calls (`batch`): what their nested calls run under. */
  private readonly nesting = new Map<
    string,
    { batch: number; input: Pick<RunCallsInput, "recorder">; budget: { remaining: number } }
  >();

  /** The SubCallPort of a nesting call that is running now. */
  private nestedCalls(prepared: Prepared): { subCalls?: SubCallPort } {
    const running = this.nesting.get(prepared.call.id);
    if (running === undefined) return {};
    return {
      subCalls: this.subCalls(
        { id: prepared.call.id, batch: running.batch },
        prepared.call.id,
        running.input,
        running.budget,
      ),
    };
  }

  /**
   * Nested calls of the call `parent` (its program's), each through this pipeline as a call of
   * its own: `prefix` is the parent's id, or `PARENT/rK` when a crash recovery runs it again.
   */
  subCalls(
    parent: { id: string; batch: number },
    prefix: string,
    input: Pick<RunCallsInput, "recorder">,
    budget: { remaining: number },
  ): SubCallPort {
    return subCallPort({
      parent,
      prefix,
      snapshot: this.options.snapshot,
      ...(this.options.notOffered ? { notOffered: this.options.notOffered } : {}),
      hooks: this.hooks,
      recorder: input.recorder,
      budget,
      authorize: (prepared, signal) => this.authorize(prepared, input.recorder, signal),
      run: (prepared, signal) => this.runCall(prepared, parent.batch, 0, { ...input, signal }, budget),
    });
  }

  /** One authorized call: execution (with retries), its proposals, hooks, normalization. */
  private async runCall(
    prepared: Prepared,
    batchId: number,
    queueWaitMs: number,
    input: Pick<RunCallsInput, "recorder" | "signal">,
    budget: { remaining: number },
  ) {
    const { call, entry } = prepared;
    if (entry.tool.nests) this.nesting.set(call.id, { batch: batchId, input, budget });
    try {
      return await this.runOne(prepared, batchId, queueWaitMs, input);
    } finally {
      this.nesting.delete(call.id);
    }
  }

  private async runOne(
    prepared: Prepared,
    batchId: number,
    queueWaitMs: number,
    input: Pick<RunCallsInput, "recorder" | "signal">,
  ) {
    const { call, entry } = prepared;
    const tool = entry.tool;
    const startedAt = Date.now();
    // In propose mode reads see the pending proposals too, so a re-read shows the preview the
    // model is building on. One overlay per call, however many attempts it takes.
    const viewsProposals =
      prepared.permission?.decision === "propose" || tool.effect === "read_only" || tool.effect === "pure";
    if (this.options.proposals && viewsProposals) prepared.overlay = this.options.proposals.begin(call.id);
    const execute = () => executeWithRetries(prepared, this.execution, input.signal, input.recorder);
    // Every process-running call (a shell command, an MCP server's tool), one place: the tree
    // before (outside changes journaled first) and after.
    const effects = this.options.effects;
    const source = tool.effect === "process_execution" ? "shell" : tool.comparedAs;
    const compared =
      effects && source !== undefined && !prepared.overlay
        ? await effects.around(source, this.effectsJournal(input), execute)
        : { value: await execute() };
    // Journaled with the next write (the result's at the latest), before anything a hook changes
    // after it: the record keeps the order the changes were made in.
    if (compared.found && effects)
      await deferRecord(input.recorder, [effects.event(call.id, compared.found)]);
    let { result, attempts } = compared.value;
    if (prepared.overlay) result = asProposal(result, prepared.overlay.finish());
    if (result.status !== "ok") await this.hooks.notify("on_error", call, entry, result.status);
    await this.hooks.notify("before_project", call, entry, result.status);
    const facts = { batch: batchId, queueWaitMs, startedAt, attempts };
    const normalized = await normalize(result, facts, this.options.previewLimitBytes, this.options.artifacts);
    await this.hooks.notify("after_project", call, entry, normalized.status);
    const found = this.reported.get(call.id);
    this.reported.delete(call.id);
    return found ? { ...normalized, workspace: found } : normalized;
  }

  /** Changes file tools reported, by call id, until their result is committed. */
  private readonly reported = new Map<string, FoundChange>();

  private toolChanged(
    prepared: Prepared,
    change: Parameters<NonNullable<RuntimeOptions["effects"]>["toolChanged"]>[0],
  ): void {
    const kept = this.options.effects?.toolChanged(change);
    if (kept === undefined) return;
    const earlier = this.reported.get(prepared.call.id)?.change;
    const merged = earlier
      ? {
          created: [...earlier.created, ...kept.created],
          modified: [...earlier.modified, ...kept.modified],
          deleted: [...earlier.deleted, ...kept.deleted],
        }
      : kept;
    this.reported.set(prepared.call.id, { source: "tool", change: merged });
  }

  private effectsJournal(input: Pick<RunCallsInput, "recorder">) {
    return {
      record: (events: Parameters<RunCallsInput["recorder"]["record"]>[0]) => input.recorder.record(events),
      nextSeq: () => this.options.nextSeq?.() ?? 0,
    };
  }

  /** Hook records not yet written (the engine journals what is left after a reply's calls). */
  drainHookRecords(): HookRecord[] {
    return this.hooks.drain();
  }
}

/** A call's live output goes to the progress listener, when it wants it (else tools skip the work). */
function traceContext(
  callId: string,
  progress: ProgressListener | undefined,
): { traceparent?(): string | undefined } {
  const traceparent = progress?.traceparent;
  if (traceparent === undefined) return {};
  return { traceparent: () => traceparent.call(progress, callId) };
}

function liveOutput(callId: string, progress: ProgressListener | undefined): { output?(text: string): void } {
  const toolOutput = progress?.toolOutput;
  if (toolOutput === undefined) return {};
  return { output: (text) => toolOutput.call(progress, callId, text) };
}
