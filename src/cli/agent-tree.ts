import { SessionState } from "../engine/state.js";
import type { JournalStore } from "../journal/store.js";
import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import { escapeForTerminal } from "../shared/terminal-text.js";

type Finished = EventData<"agent.finished">;

/** One sub-agent as its parent's journal records it, with its own sub-agents read from its journal. */
export interface AgentNode {
  /** The `agent` call that started it, in the parent. */
  call_id: string;
  label: string;
  child_session: string;
  depth: number;
  /** Null while the parent's journal has no `agent.finished` for it. */
  outcome: Finished["outcome"] | null;
  usage: Finished["usage"] | null;
  changes: Finished["changes"];
  conflicts: Finished["conflicts"];
  agents: AgentNode[];
  /** The child's own records (empty when its journal cannot be read). */
  records: AnyRecord[];
  /** Why the child's journal could not be read, when it could not. */
  unreadable?: string;
}

/**
 * The sub-agents a session's records started, each with its own read from its journal (showing
 * reads an untrusted journal too, as inspect does), down to the deepest. A child whose journal
 * cannot be read is still listed from what its parent recorded, saying why.
 */
export async function agentTree(store: JournalStore, records: readonly AnyRecord[]): Promise<AgentNode[]> {
  const state = SessionState.from(records);
  const nodes: AgentNode[] = [];
  for (const [callId, agent] of state.agents) {
    const { started, finished } = agent;
    let childRecords: AnyRecord[] = [];
    let unreadable: string | undefined;
    try {
      childRecords = (await store.readReport(started.child_session)).records;
    } catch (error) {
      unreadable = error instanceof Error ? error.message : String(error);
    }
    nodes.push({
      call_id: callId,
      label: started.label,
      child_session: started.child_session,
      depth: started.depth,
      outcome: finished?.outcome ?? null,
      usage: finished?.usage ?? null,
      changes: finished?.changes ?? [],
      conflicts: finished?.conflicts ?? [],
      agents: childRecords.length > 0 ? await agentTree(store, childRecords) : [],
      records: childRecords,
      ...(unreadable !== undefined ? { unreadable } : {}),
    });
  }
  return nodes;
}

/** The tree as `inspect --json` prints it: the fixed fields, nested `agents`, no records. */
export function agentTreeJson(nodes: readonly AgentNode[]): unknown[] {
  return nodes.map((node) => ({
    label: node.label,
    child_session: node.child_session,
    depth: node.depth,
    outcome: node.outcome,
    usage: node.usage,
    changes: node.changes,
    conflicts: node.conflicts,
    agents: agentTreeJson(node.agents),
    ...(node.unreadable !== undefined ? { unreadable: node.unreadable } : {}),
  }));
}

/** One line per sub-agent, indented by depth below the session shown: label, status, spend, changes. */
export function agentTreeLines(nodes: readonly AgentNode[], indent = "  "): string[] {
  const lines: string[] = [];
  for (const node of nodes) {
    const status = node.outcome ?? "running (no agent.finished recorded)";
    const spend = node.usage
      ? `${node.usage.model_requests} model requests, ${node.usage.tool_calls} tool calls, tokens in ${node.usage.input_tokens} / out ${node.usage.output_tokens}`
      : "spend not recorded yet";
    const applied = node.changes.filter((change) => change.applied === true).length;
    const changes = `${node.changes.length} change(s)${applied > 0 ? ` (${applied} applied)` : ""}`;
    const conflicts = `${node.conflicts.length} conflict(s)`;
    lines.push(
      `${indent}${escapeForTerminal(node.label)}  depth ${node.depth}  ${status}  ${spend}; ${changes}; ${conflicts}  (${escapeForTerminal(node.child_session)})`,
    );
    for (const change of node.changes)
      lines.push(
        `${indent}    ${change.applied === true ? "applied" : "found"} ${escapeForTerminal(change.path)} +${change.added} -${change.removed}`,
      );
    for (const conflict of node.conflicts)
      lines.push(
        `${indent}    conflict ${escapeForTerminal(conflict.path)}: ${escapeForTerminal(conflict.reason)}`,
      );
    if (node.unreadable !== undefined)
      lines.push(`${indent}    journal not readable: ${escapeForTerminal(node.unreadable)}`);
    lines.push(...agentTreeLines(node.agents, `${indent}  `));
  }
  return lines;
}
