import type { DelegationPort } from "../tools/tool.js";
import { leftUsd } from "./money-budget.js";
import type { EngineRun } from "./outcome.js";

/**
 * What the `agent` tool may do in the session running it: append its `agent.*` records (durable
 * before it goes on: a child's grant before the child's first request, a merge's intent before
 * any file is touched) and read what the turn may still spend. A finished child's spend is
 * folded into the turn's counters by `agent.finished`, so it is the session's spend too.
 */
export function delegationPort(
  run: Pick<EngineRun, "record" | "state" | "limits" | "options">,
): DelegationPort {
  return {
    record: (event) => run.record(event),
    remaining: () => {
      const money = leftUsd(run);
      return {
        model_requests: Math.max(0, run.limits.maxModelRequests - run.state.turnModelRequests),
        tool_calls: Math.max(0, run.limits.maxToolCalls - run.state.turnToolCalls),
        ...(money !== undefined ? { cost_usd: Math.max(0, money) } : {}),
      };
    },
    children: () => run.state.agents.size,
    recorded: (label) => [...run.state.agents.values()].find((agent) => agent.started.label === label),
    changed: async (callId, change) => {
      const effects = run.options.runtime.effects;
      const kept = effects ? effects.toolChanged(change) : change;
      if (kept === undefined) return;
      await run.record({ type: "workspace.changed", data: { call_id: callId, source: "tool", ...kept } });
    },
    changedPaths: (callId) => run.state.changedPaths.get(callId) ?? new Set(),
    observe: (path, record) => run.options.listener?.agentRecord?.(path, record),
    traceparent: (path, callId) => run.options.listener?.agentTraceparent?.(path, callId),
  };
}
