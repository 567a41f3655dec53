import type { QuotaPort } from "../../engine/quota-port.js";
import { SessionState } from "../../engine/state.js";
import type { JournalStore } from "../../journal/store.js";
import type { EventData } from "../../journal/vocabulary.js";
import type { ModelPrices } from "../../providers/config.js";
import { costUsd } from "../../providers/cost.js";
import type { Provider } from "../../providers/provider.js";
import type { ApprovalPort, HookPort, PermissionPort } from "../../runtime/ports.js";
import { ToolError } from "../../tools/errors.js";
import type { DelegationPort, RecordedAgent, ToolContext, ToolOutput } from "../../tools/tool.js";
import type { McpServers } from "../mcp-servers.js";
import type { HookNetworks } from "../network.js";
import type { Notify } from "../notice.js";
import type { OpenedWorkspace } from "../workspace.js";
import { grantedAcceptance } from "./acceptance.js";
import { runChildSession } from "./child-run.js";
import {
  type ChildWorkspace,
  childWorkspace,
  mergeBack,
  openChildWorkspace,
  recordedChange,
} from "./child-workspace.js";
import { type GrantRequest, narrowGrant, type ParentPowers } from "./grant.js";
import type { AgentLimits } from "./limits.js";
import { type AgentOutcome, agentOutcome, resultOf } from "./outcome.js";
import { childProposals } from "./proposals.js";
import type { AgentArgs } from "./tool.js";

/**
 * A child's budget when the call names none: an equal share of what is left among as many
 * children as may run at once (one request kept back for this session to read their results),
 * at most these.
 */
const DEFAULT_CHILD_REQUESTS = 25;
const DEFAULT_CHILD_TOOL_CALLS = 100;

function share(left: number, ways: number, most: number): number {
  return Math.max(1, Math.min(most, Math.floor((left - 1) / Math.max(1, ways))));
}

/** Where a session's `agent` calls take what they need from the session that runs them. */
export interface DelegationParent {
  sessionId: string;
  workspace: OpenedWorkspace;
  store: JournalStore;
  limits: AgentLimits;
  interactive: boolean;
  env?: NodeJS.ProcessEnv;
  notify?: Notify;
  /**
   * The quota this session's door reserves its model requests against (a fleet queue's, a server
   * identity's): its children's requests reserve against the same one, so no sub-agent spends
   * past what the door allows.
   */
  quota?: QuotaPort;
  /** Known once the session's setup is done (the tools and policy are built after the tool). */
  bound?: DelegationBinding;
}

export interface DelegationBinding {
  provider: Provider;
  /** The user config's `agent_profile`: children talk to that model instead of this session's. */
  agentProfile?: string;
  prices?: ModelPrices;
  permissions: PermissionPort;
  approver: ApprovalPort;
  hooks?: HookPort;
  /**
   * Where those hooks find a child's network: a child registers its own while it runs, so a hook
   * running for the child's call is decided and journaled in the child's session.
   */
  hookNetworks?: HookNetworks;
  powers: ParentPowers;
  /** This session's started MCP servers, shared with its children (their grant picks the tools). */
  mcp?: McpServers;
  /** Kill what is left of a child's recorded process group; returns how many were killed. */
  killSurvivors(spawn: { pgid: number; bootId: string; startTicks: number }): Promise<number>;
}

export type Budget = EventData<"agent.started">["budget"];

/**
 * One session's delegation: the `agent` calls it makes, held to its limits (depth, children at
 * once, children per session) and budgets before anything starts, each child a session of its
 * own (`PARENT/LABEL`, journaled in this session's store) whose grant is this session's narrowed,
 * whose asks come up to this session's approver, whose cancellation follows this session's, and
 * whose changes come back compare-and-swap.
 */
export class Delegation {
  /** Children started (journaled before, or by this process): counted synchronously, in call order. */
  private started: number | undefined;
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly labels = new Set<string>();
  /** What running children hold of this turn's budgets. */
  private reserved = { model_requests: 0, tool_calls: 0, cost_usd: 0 };

  constructor(private readonly parent: DelegationParent) {}

  /** What the session's setup builds after the tool: its model, policy, approver and tools. */
  bind(binding: DelegationBinding): void {
    this.parent.bound = binding;
  }

  /** This session's depth: 0 for a root, 1 for its children... */
  get depth(): number {
    return this.parent.sessionId.split("/").length - 1;
  }

  async run(args: AgentArgs, context: ToolContext): Promise<ToolOutput> {
    const port = context.delegation;
    const bound = this.parent.bound;
    if (!port || !bound) throw new ToolError("RUNTIME_EXCEPTION", "agent: this session cannot delegate here");
    const childId = `${this.parent.sessionId}/${args.label}`;
    // Everything that can refuse is decided before any await: calls are refused in call order.
    const depth = this.depth + 1;
    const { limits } = this.parent;
    if (depth > limits.depth)
      throw limitError(
        `a child of this session would be at depth ${depth}; --agents-depth is ${limits.depth}` +
          (limits.depth <= this.depth ? " (this session may not delegate)" : ""),
        { limit: "depth", asked: depth, allowed: limits.depth },
      );
    this.started ??= port.children();
    if (this.labels.has(args.label) || port.recorded(args.label) !== undefined)
      throw new ToolError(
        "SEMANTIC_VALIDATION_ERROR",
        `agent label "${args.label}" is already used in this session`,
      );
    if (this.started >= limits.max)
      throw limitError(`this session has started ${this.started} children; --agents-max is ${limits.max}`, {
        limit: "max",
        asked: this.started + 1,
        allowed: limits.max,
      });
    this.started += 1;
    this.labels.add(args.label);
    await this.turnToRun(context.signal);
    // From here this call holds a slot, given back whatever happens.
    try {
      // Reserved when the child is about to start: a call that waited for a slot takes its share
      // of what is left then, after the children before it gave back what they did not spend.
      const budget = this.reserve(args.budget, port.remaining());
      try {
        return await this.runChild(args, context, { childId, depth, budget });
      } finally {
        this.reserved.model_requests -= budget.model_requests;
        this.reserved.tool_calls -= budget.tool_calls;
        this.reserved.cost_usd -= budget.cost_usd ?? 0;
      }
    } finally {
      this.running -= 1;
      this.waiting.shift()?.();
    }
  }

  /**
   * After a crash: a child whose call started but has no result. Finished: its result is rebuilt
   * from the journals (a merge recorded as begun is completed, never applied twice: each file is
   * compare-and-swapped against the versions the child's base and copy hold). Unfinished: the
   * child is resumed as any session is. Never started: nothing happened yet, so it starts now.
   */
  async reconcile(args: AgentArgs, context: ToolContext): Promise<ToolOutput | undefined> {
    const port = context.delegation;
    if (!port) return undefined;
    const recorded = port.recorded(args.label);
    if (recorded === undefined) return this.run(args, context);
    const { started, finished } = recorded;
    if (started.call_id !== context.callId) return undefined;
    this.labels.add(args.label);
    if (finished) return resultOf(finished, started, []);
    this.started ??= port.children();
    return this.runChild(args, context, {
      childId: started.child_session,
      depth: started.depth,
      budget: started.budget,
      resumed: recorded,
    });
  }

  /**
   * Hold `asked` (or a default share) of what the turn has left, or refuse with the numbers. Money
   * only narrows: under a money budget a child gets at most what is left of it (less what running
   * siblings hold), whatever it asked, and all of it when it asked none; nothing left is refused.
   */
  private reserve(asked: AgentArgs["budget"], left: ReturnType<DelegationPort["remaining"]>): Budget {
    const free = {
      model_requests: left.model_requests - this.reserved.model_requests,
      tool_calls: left.tool_calls - this.reserved.tool_calls,
      ...(left.cost_usd !== undefined ? { cost_usd: left.cost_usd - this.reserved.cost_usd } : {}),
    };
    const money =
      free.cost_usd === undefined
        ? asked?.cost_usd
        : Math.min(asked?.cost_usd ?? Number.POSITIVE_INFINITY, free.cost_usd);
    const budget: Budget = {
      model_requests:
        asked?.model_requests ??
        share(left.model_requests, this.parent.limits.concurrent, DEFAULT_CHILD_REQUESTS),
      tool_calls:
        asked?.tool_calls ?? share(left.tool_calls, this.parent.limits.concurrent, DEFAULT_CHILD_TOOL_CALLS),
      ...(asked?.tokens !== undefined ? { tokens: asked.tokens } : {}),
      ...(money !== undefined ? { cost_usd: money } : {}),
      ...(asked?.wall_ms !== undefined ? { wall_ms: asked.wall_ms } : {}),
    };
    const over: string[] = [];
    if (budget.model_requests > free.model_requests || budget.model_requests < 1)
      over.push(`model_requests: asked ${budget.model_requests}, ${free.model_requests} left`);
    if (budget.tool_calls > free.tool_calls)
      over.push(`tool_calls: asked ${budget.tool_calls}, ${free.tool_calls} left`);
    if (free.cost_usd !== undefined && free.cost_usd <= 0)
      over.push(`cost_usd: nothing left of this session's money budget`);
    if (over.length > 0)
      throw new ToolError(
        "BUDGET_EXCEEDED",
        `the child's budget does not fit in what this session has left (${over.join("; ")})`,
        { data: { asked: { ...budget }, left: free } },
      );
    this.reserved.model_requests += budget.model_requests;
    this.reserved.tool_calls += budget.tool_calls;
    this.reserved.cost_usd += budget.cost_usd ?? 0;
    return budget;
  }

  /** Wait for a free slot (`--agents-concurrent`): calls past it wait their turn, in order. */
  private async turnToRun(signal: AbortSignal): Promise<void> {
    if (this.running < this.parent.limits.concurrent) {
      this.running += 1;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const onAbort = () =>
        reject(new ToolError("CANCELLED", "agent: cancelled while waiting for a free slot"));
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiting.push(() => {
        signal.removeEventListener("abort", onAbort);
        this.running += 1;
        resolve();
      });
    });
  }

  private async runChild(
    args: AgentArgs,
    context: ToolContext,
    child: { childId: string; depth: number; budget: Budget; resumed?: RecordedAgent },
  ): Promise<ToolOutput> {
    const port = context.delegation!;
    const bound = this.parent.bound!;
    const { childId, depth, budget } = child;
    const isolation = args.isolation ?? "copy";
    const request: GrantRequest = {
      tools: args.tools,
      read_paths: args.read_paths,
      edit_paths: args.edit_paths,
      write: args.write,
      shell: args.shell,
      isolation,
    };
    const grant = narrowGrant(bound.powers, request);
    // Checks the model names run on the host: only those this session's shell may run unasked.
    const checks = await grantedAcceptance(args.accept, {
      permissions: bound.permissions,
      tools: bound.powers.tools,
    });
    grant.notGranted.push(...checks.notGranted);
    const askedUsd = args.budget?.cost_usd;
    if (askedUsd !== undefined && budget.cost_usd !== undefined && budget.cost_usd < askedUsd)
      grant.notGranted.push(
        `budget cost_usd ${askedUsd}: this session has $${budget.cost_usd.toFixed(4)} left of its money budget, and that is the child's`,
      );
    const mergeAsked = args.merge ?? "propose";
    const mayApply = bound.powers.write === "allow" && !bound.powers.readOnly;
    if (mergeAsked === "apply" && !mayApply)
      grant.notGranted.push(`merge "apply": this session may not write (write "${bound.powers.write}")`);
    const merge = mergeAsked === "apply" && mayApply ? "apply" : "propose";

    const workspace: ChildWorkspace = child.resumed
      ? await openChildWorkspace(this.parent.workspace, childId, isolation, this.parent.env)
      : await childWorkspace(this.parent.workspace, childId, isolation, context.signal, this.parent.env);
    if (!child.resumed) {
      await port.record({
        type: "agent.started",
        data: {
          call_id: context.callId,
          label: args.label,
          child_session: childId,
          depth,
          grant: { ...grant.recorded, merge },
          budget,
        },
      });
    }

    const ran = await runChildSession({
      task: args.task,
      label: args.label,
      childId,
      depth,
      budget,
      flags: {
        ...grant.flags,
        ...(checks.accept !== undefined ? { accept: checks.accept } : {}),
      },
      workspace: workspace.opened,
      store: this.parent.store,
      interactive: this.parent.interactive,
      ...(this.parent.env !== undefined ? { env: this.parent.env } : {}),
      ...(this.parent.notify !== undefined ? { notify: this.parent.notify } : {}),
      ...(this.parent.quota !== undefined ? { quota: this.parent.quota } : {}),
      bound,
      port,
      signal: context.signal,
      resumed: child.resumed !== undefined,
    });
    const { summary, failure, exhausted } = ran;

    // The child's record, read back: what it spent, its last record, the processes it left.
    const records = (await this.parent.store.exists(childId)) ? await this.parent.store.read(childId) : [];
    const state = SessionState.from(records);
    let survivors = 0;
    for (const spawn of state.spawns) {
      survivors += await ran
        .killSurvivors({
          pgid: spawn.pgid,
          bootId: spawn.boot_id,
          startTicks: spawn.start_ticks,
        })
        .catch(() => 0);
    }
    const outcome: AgentOutcome = agentOutcome(summary, {
      cancelled: context.signal.aborted,
      exhausted: exhausted !== undefined,
      failed: failure !== undefined,
    });
    // One walk of the copy: the recorded changes, the merge and the proposals all come from it.
    const scanned = await workspace.raw();
    const found = scanned.map(recordedChange);
    const mergeable =
      merge === "apply" &&
      isolation === "copy" &&
      (outcome === "verified" || (outcome === "unverified" && (args.accept ?? []).length === 0));
    let merged: Awaited<ReturnType<typeof mergeBack>> | undefined;
    // A merge begun before a crash is finished with the files it recorded as its intent.
    const intended = child.resumed?.merge?.files;
    if ((mergeable && found.length > 0) || intended !== undefined) {
      const files = intended ?? found;
      if (intended === undefined)
        await port.record({ type: "agent.merge", data: { call_id: context.callId, files } });
      merged = await mergeBack(
        workspace,
        scanned,
        files,
        { fs: context.fs, artifacts: context.artifacts, permissions: bound.permissions },
        // After a crash, files the interrupted merge had written and not yet journaled are this
        // call's changes too; those it journaled are never recorded twice.
        intended !== undefined
          ? { attributeAlready: true, journaled: port.changedPaths(context.callId) }
          : {},
      );
      if (merged.change) await port.changed(context.callId, merged.change);
    }
    // Not merged: the changes become this session's proposals, bound to their base versions
    // (`harness diff` shows them, `harness apply` writes each compare-and-swap).
    let proposed: Awaited<ReturnType<typeof childProposals>> | undefined;
    if (
      merged === undefined &&
      isolation === "copy" &&
      found.length > 0 &&
      outcome !== "cancelled" &&
      outcome !== "failed"
    ) {
      proposed = await childProposals(
        context.callId,
        workspace.opened.root,
        scanned,
        (hash) => workspace.base(hash),
        context.artifacts,
      );
      for (const proposal of proposed.proposals)
        await port.record({ type: "proposal.recorded", data: proposal });
    }
    const applied = new Set(merged?.applied ?? []);
    const changes = found.map((change) => ({ ...change, applied: applied.has(change.path) }));
    const finished: EventData<"agent.finished"> = {
      call_id: context.callId,
      child_session: childId,
      head_hash: records.at(-1)?.hash ?? null,
      outcome,
      usage: {
        model_requests: state.modelRequests + state.agentUsage.model_requests,
        tool_calls: state.toolCalls + state.agentUsage.tool_calls,
        input_tokens: state.usage.input_tokens + state.agentUsage.input_tokens,
        output_tokens: state.usage.output_tokens + state.agentUsage.output_tokens,
        ...(bound.prices
          ? {
              cost_usd: costUsd(
                {
                  input_tokens: state.usage.input_tokens,
                  output_tokens: state.usage.output_tokens,
                  cached_tokens: state.usage.cached_tokens,
                },
                bound.prices,
              ),
            }
          : {}),
      },
      changes,
      conflicts: merged?.conflicts ?? [],
      survivors,
    };
    await port.record({ type: "agent.finished", data: finished });
    // The child's record is its journal; its copy (which may hold any file of the workspace) is
    // removed once its end is journaled, unless a person must look at what it left (unknown outcome).
    if (outcome !== "review_required") await workspace.remove();
    const started = port.recorded(args.label)?.started;
    const notes = [
      ...grant.notGranted.map((line) => `not granted: ${line}`),
      ...(exhausted ? [`stopped: its budget ran out (${exhausted})`] : []),
      ...(failure ? [`failed to run: ${failure}`] : []),
      ...(proposed && proposed.proposals.length > 0
        ? [
            `proposed: ${proposed.proposals.length} file(s) recorded as this session's proposals, each bound to its base version (harness diff / harness apply)`,
          ]
        : []),
      ...(proposed?.skipped ?? []).map((skip) => `not proposed: ${skip.path}: ${skip.reason}`),
    ];
    return resultOf(finished, started, notes, summary?.answer ?? null);
  }
}

function limitError(message: string, data: { limit: string; asked: number; allowed: number }): ToolError {
  return new ToolError("AGENT_LIMIT", message, { data });
}
