import { z } from "zod";
import { defineTool, type ToolDefinition } from "../../tools/tool.js";
import type { Delegation } from "./delegation.js";

const label = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/,
    "1-32 letters, digits, '_' or '-', starting with a letter or digit",
  );
const path = z.string().min(1).max(4096);

export const agentArgsSchema = z.strictObject({
  task: z
    .string()
    .min(1)
    .max(100_000)
    .describe("The child's goal, complete: it sees nothing of this conversation."),
  label: label.describe("A name for the child, unique in this session (its session id is PARENT/LABEL)."),
  tools: z
    .array(z.string().min(1))
    .max(64)
    .optional()
    .describe("The tools the child may use (a subset of yours; default: all of yours but MCP tools)."),
  read_paths: z.array(path).max(1000).optional().describe("Only these files may be read (exact paths)."),
  edit_paths: z
    .array(path)
    .max(1000)
    .optional()
    .describe("Only these files may be changed (also read paths)."),
  write: z
    .enum(["allow", "ask", "deny", "propose"])
    .optional()
    .describe("Write mode (never looser than yours)."),
  shell: z.enum(["allow", "ask", "deny"]).optional().describe("Shell mode (never looser than yours)."),
  budget: z
    .strictObject({
      model_requests: z.number().int().positive().optional(),
      tool_calls: z.number().int().nonnegative().optional(),
      tokens: z.number().int().positive().optional(),
      cost_usd: z.number().positive().optional(),
      wall_ms: z.number().int().positive().optional(),
    })
    .optional()
    .describe("What the child may spend, reserved from what you have left."),
  isolation: z
    .enum(["copy", "shared"])
    .optional()
    .describe("copy (default): a private copy of the workspace; shared: reads yours, never writes."),
  merge: z
    .enum(["propose", "apply"])
    .optional()
    .describe(
      "propose (default): its changes come back as proposals; apply: written into your workspace where unchanged since.",
    ),
  accept: z
    .array(z.string().min(1))
    .max(16)
    .optional()
    .describe("Commands run by the host in the child's workspace: the child is verified only if all exit 0."),
});

export type AgentArgs = z.infer<typeof agentArgsSchema>;

/** The `agent` tool: delegates a task to a child session bounded by this one (see delegation.ts). */
export function agentTool(delegation: Delegation): ToolDefinition<AgentArgs> {
  return defineTool<AgentArgs>({
    name: "agent",
    description:
      "Delegate a self-contained task to a sub-agent: a child session with its own model requests, " +
      "working in a private copy of the workspace (or reading yours with isolation shared). It can " +
      "never do more than you may: its tools, paths and modes are yours narrowed to what you ask, and " +
      "its budget is taken from yours. Several agent calls in one reply run in parallel. The result " +
      "gives the child's outcome (verified, unverified, failed, budget_exhausted, cancelled, " +
      "review_required), its final text, its changes (path, base and new version, lines added/removed), " +
      "conflicts, usage and the hash of its journal's last record. Its 'done' is a claim: check it.",
    version: "1",
    input: agentArgsSchema,
    // The call itself reads: each of the child's calls is decided by the child's (narrowed) policy,
    // and each file a merge writes here by this session's policy, as write_file would be.
    effect: "read_only",
    idempotency: "non_idempotent",
    // The child's own budget (wall_ms) bounds it; this is only the outer limit.
    timeoutMs: 24 * 60 * 60 * 1000,
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
