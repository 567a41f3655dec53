import type { RunSummary } from "../../engine/options.js";
import type { QuotaPort } from "../../engine/quota-port.js";
import { SessionState } from "../../engine/state.js";
import type { JournalStore } from "../../journal/store.js";
import type { AnyRecord } from "../../journal/vocabulary.js";
import { IntersectedPermissions } from "../../policy/intersect.js";
import { costUsd } from "../../providers/cost.js";
import { digestOf } from "../../shared/hash.js";
import type { DelegationPort } from "../../tools/tool.js";
import type { SessionConfig } from "../config.js";
import { EngineSession } from "../handle.js";
import type { Notify } from "../notice.js";
import { prepareSession } from "../prepare.js";
import type { OpenedWorkspace } from "../workspace.js";
import { UpwardApprover } from "./approver.js";
import type { Budget, DelegationBinding } from "./delegation.js";

/** What running a child needs: its task, identity, budget, options and where it answers to. */
export interface ChildSessionInput {
  task: string;
  label: string;
  childId: string;
  depth: number;
  budget: Budget;
  /** The child's own options (its grant) and acceptance commands. */
  flags: SessionConfig;
  workspace: OpenedWorkspace;
  /** The parent's journal store: the child's journal lives under the parent's session. */
  store: JournalStore;
  interactive: boolean;
  env?: NodeJS.ProcessEnv;
  notify?: Notify;
  /** The parent's shared quota: the child's requests (and its own children's) reserve against it. */
  quota?: QuotaPort;
  bound: DelegationBinding;
  port: DelegationPort;
  /** The parent call's signal: its cancellation is the child's. */
  signal: AbortSignal;
  /** Journaled as started before (a resume after a crash). */
  resumed: boolean;
}

/** How the child's run ended, as its delegation judges it. */
export interface ChildRun {
  summary?: RunSummary;
  /** The child could not be set up or run (its message). */
  failure?: string;
  /** Which of its budgets stopped it, when one did. */
  exhausted?: string;
  /** Kill what is left of a recorded process group of the child. */
  killSurvivors: DelegationBinding["killSurvivors"];
}

/**
 * Set up and run the child session (a new one, or the recorded one after a crash), bounded by
 * its parent: its policy the intersection of its own and the parent's, the parent's hooks, asks
 * going up to the parent's approver, the parent's cancellation, and its token, money and
 * wall-time budgets watched as it runs. A child that had ended before a crash is not run again.
 */
export async function runChildSession(input: ChildSessionInput): Promise<ChildRun> {
  const { bound, port, budget, childId } = input;
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(input.signal.reason);
  if (input.signal.aborted) controller.abort(input.signal.reason);
  else input.signal.addEventListener("abort", onParentAbort, { once: true });
  const run: ChildRun = { killSurvivors: bound.killSurvivors };
  const exhaust = (why: string) => {
    run.exhausted ??= why;
    controller.abort(new Error(why));
  };
  // At most the call's own day (agent tool timeout), so a timer never overflows to fire at once.
  const wall =
    budget.wall_ms !== undefined
      ? setTimeout(() => exhaust(`wall_ms ${budget.wall_ms}`), budget.wall_ms)
      : undefined;
  wall?.unref();
  let registered = false;
  try {
    const prepared = await prepareSession(
      {
        ...modelOf(input.flags, bound.agentProfile),
        limits: { maxModelRequests: budget.model_requests, maxToolCalls: budget.tool_calls },
        // Its money budget is enforced inside it as `--max-cost-usd` is (engine/money-budget.ts):
        // a request that would cross it is never sent, rather than stopped after the spend.
        ...(budget.cost_usd !== undefined ? { maxCostUsd: budget.cost_usd } : {}),
      },
      {
        workspace: input.workspace,
        sessionId: childId,
        store: input.store,
        interactive: input.interactive,
        approver: new UpwardApprover(
          bound.approver,
          { label: input.label, path: childId.split("/").slice(1).join("/"), depth: input.depth },
          (event) => port.record(event),
        ),
        // The parent's model, unless the user's config names a profile for sub-agents.
        ...(bound.agentProfile === undefined
          ? {
              provider: bound.provider.forAgent?.(input.label) ?? bound.provider,
              // Priced as the parent's model is, so the child's money budget is enforced inside it.
              ...(bound.prices !== undefined ? { providerPrices: bound.prices } : {}),
            }
          : {}),
        // The parent's MCP servers, shared: the grant's tool list picks which of their tools it gets.
        ...(bound.mcp !== undefined ? { sharedMcp: bound.mcp } : {}),
        ...(input.env !== undefined ? { env: input.env } : {}),
        ...(input.notify !== undefined ? { notify: input.notify } : {}),
        ...(input.quota !== undefined ? { quota: input.quota } : {}),
      },
    );
    const setup = prepared.run.setup;
    // The grant can only narrow: every call of the child is decided by its own policy AND this
    // session's; this session's hooks see the child's calls as they see its own.
    setup.policy = {
      describe: { ...setup.policy.describe, parent: childId.split("/").slice(0, -1).join("/") },
      digest: digestOf({ own: setup.policy.digest, parent: digestOf({ powers: bound.powers }) }),
      permissions: new IntersectedPermissions(setup.policy.permissions, bound.permissions),
    };
    if (bound.hooks) {
      setup.hooks = bound.hooks;
      bound.hookNetworks?.set(childId, setup.callNetwork);
      registered = true;
    }
    if (setup.processes) run.killSurvivors = setup.processes.killSurvivors;
    const session = new EngineSession(prepared.run, prepared.records.length > 0, {
      signal: controller.signal,
    });
    const spent = { tokens: 0, cost: 0 };
    const listener = {
      // Whoever watches the parent live sees the child's records too, tagged with its path.
      agentRecord: (path: string, record: AnyRecord) => port.observe?.(`${input.label}/${path}`, record),
      // The child's calls continue the parent's trace (a live export): their processes and MCP
      // servers get the span the parent's export gives each call, nested under the agent call.
      traceparent: (callId: string) => port.traceparent?.(input.label, callId),
      agentTraceparent: (path: string, callId: string) =>
        port.traceparent?.(`${input.label}/${path}`, callId),
      record: (record: AnyRecord) => {
        port.observe?.(input.label, record);
        if (record.type !== "model.reply" || !record.data.usage) return;
        const usage = record.data.usage;
        spent.tokens += (usage.input_tokens ?? 0) + (usage.output_tokens ?? 0);
        if (bound.prices)
          spent.cost += costUsd(
            {
              input_tokens: usage.input_tokens ?? 0,
              output_tokens: usage.output_tokens ?? 0,
              cached_tokens: usage.cached_tokens ?? 0,
            },
            bound.prices,
          );
        if (budget.tokens !== undefined && spent.tokens >= budget.tokens) exhaust(`tokens ${budget.tokens}`);
        if (budget.cost_usd !== undefined && bound.prices && spent.cost >= budget.cost_usd)
          exhaust(`cost_usd ${budget.cost_usd}`);
      },
    };
    // A child that had ended before the crash is not run again: its end is read from its journal.
    const ended = input.resumed ? recordedSummary(prepared.records) : undefined;
    run.summary =
      ended ??
      (await (prepared.records.length > 0 && input.resumed
        ? session.resume(listener)
        : session.turn(input.task, listener)));
  } catch (error) {
    run.failure = error instanceof Error ? error.message : String(error);
  } finally {
    if (wall) clearTimeout(wall);
    if (registered) bound.hookNetworks?.delete(childId);
    input.signal.removeEventListener("abort", onParentAbort);
  }
  return run;
}

/**
 * The child's options with its model: its parent's (passed as a provider), or the profile the
 * user's config names for sub-agents, which then replaces every model option the parent had.
 */
function modelOf(flags: SessionConfig, profile: string | undefined): SessionConfig {
  if (profile === undefined) return flags;
  const {
    provider: _provider,
    model: _model,
    baseUrl: _baseUrl,
    apiKeyEnv: _key,
    requestDeadlineMs: _deadline,
    script: _script,
    ...rest
  } = flags;
  return { ...rest, profile };
}

/** How a child that had already ended looks as a run summary (its journal's last outcome). */
function recordedSummary(records: readonly AnyRecord[]): RunSummary | undefined {
  const state = SessionState.from(records);
  const outcome = state.outcome;
  if (outcome === undefined || outcome.kind === "interrupted") return undefined;
  const base = { session: "", events: records.length, model_requests: 0, tool_calls: 0, message: null };
  const tokens = { context_window: 0, peak_estimated_input_tokens: null, peak_reported_input_tokens: null };
  const usage = state.usage;
  if (outcome.kind === "finished")
    return { ...base, status: outcome.data.status, reason: null, answer: outcome.data.answer, usage, tokens };
  if (outcome.kind === "stopped")
    return { ...base, status: outcome.data.status, reason: outcome.data.reason, answer: null, usage, tokens };
  return { ...base, status: "cancelled", reason: null, answer: null, usage, tokens };
}
