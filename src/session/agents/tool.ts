import { z } from "zod";
import { AGENT_LABEL_PATTERN, AGENT_LABEL_RULE, isAgentLabel } from "../../shared/agent-label.js";
import { once } from "../../shared/lazy-record.js";
import { INPUT_SCHEMAS } from "../../tools/input-schemas.generated.js";
import { defineTool, type ToolDefinition } from "../../tools/tool.js";
import type { Delegation } from "./delegation.js";

// The one rule the journal holds a child's id to: a label it refuses (`artifacts`, the session
// folder's own) is refused here, before a copy is made or anything is recorded.
const label = once(() =>
  z.string().regex(AGENT_LABEL_PATTERN, AGENT_LABEL_RULE).refine(isAgentLabel, AGENT_LABEL_RULE),
);
/** The outer limit of one `agent` call, and so the most a child's `wall_ms` may be: a day. */
const AGENT_CALL_TIMEOUT_MS = 24 * 60 * 60 * 1000;

const path = once(() => z.string().min(1).max(4096));

const agentArgsSchema = once(() =>
  z.strictObject({
    task: z.string().min(1).max(100_000).describe("The whole goal: the child sees nothing else."),
    label: label().describe("Unique in this session."),
    tools: z.array(z.string().min(1)).max(64).optional().describe("A subset of yours."),
    read_paths: z.array(path()).max(1000).optional(),
    edit_paths: z.array(path()).max(1000).optional(),
    write: z.enum(["allow", "ask", "deny", "propose"]).optional(),
    shell: z.enum(["allow", "ask", "deny"]).optional(),
    budget: z
      .strictObject({
        model_requests: z.number().int().positive().optional(),
        tool_calls: z.number().int().nonnegative().optional(),
        tokens: z.number().int().positive().optional(),
        cost_usd: z.number().positive().optional(),
        // At most the call's own limit (timeoutMs): a timer past 2^31-1 ms would fire at once.
        wall_ms: z.number().int().positive().max(AGENT_CALL_TIMEOUT_MS).optional(),
      })
      .optional()
      .describe("Taken from what you have left."),
    isolation: z
      .enum(["copy", "shared"])
      .optional()
      .describe("copy (default): a private copy; shared: reads yours only."),
    merge: z
      .enum(["propose", "apply"])
      .optional()
      .describe("propose (default); apply: written here where unchanged since."),
    accept: z
      .array(z.string().min(1))
      .max(16)
      .optional()
      .describe("Host checks your shell may run unasked: verified only if all exit 0."),
  }),
);

export type AgentArgs = z.infer<ReturnType<typeof agentArgsSchema>>;

/** The `agent` tool: delegates a task to a child session bounded by this one (see delegation.ts). */
export function agentTool(delegation: Delegation): ToolDefinition<AgentArgs> {
  return defineTool<AgentArgs>({
    name: "agent",
    description:
      "Delegate a self-contained task to a sub-agent (a child session) working in a private copy of " +
      "the workspace. It never gets more than you have: tools, paths and modes are yours narrowed, its " +
      "budget comes out of yours. Calls in one reply run in parallel. Returns its outcome, final text, " +
      "changes, conflicts and usage; its 'done' is a claim to check.",
    version: "1",
    get input() {
      return agentArgsSchema();
    },
    modelSchema: INPUT_SCHEMAS.agent,
    // The call itself reads: each of the child's calls is decided by the child's (narrowed) policy,
    // and each file a merge writes here by this session's policy, as write_file would be.
    effect: "read_only",
    idempotency: "non_idempotent",
    // The child's own budget (wall_ms) bounds it; this is only the outer limit.
    timeoutMs: AGENT_CALL_TIMEOUT_MS,
    delegates: true,
    // Children run in parallel; each works in its own copy, and merges compare-and-swap per file.
    resources: (args) => ({ read: [], write: [`agent:${args.label}`] }),
    concurrencySafe: () => true,
    approvalDetails: (args) => ({
      details: {
        label: args.label,
        isolation: args.isolation ?? "copy",
        merge: args.merge ?? "propose",
        ...(args.write ? { write: args.write } : {}),
        ...(args.shell ? { shell: args.shell } : {}),
      },
    }),
    execute: (args, context) => delegation.run(args, context),
    reconcile: (args, context) => delegation.reconcile(args, context),
  });
}
