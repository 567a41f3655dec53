import type { CallToolResult, Tool } from "@modelcontextprotocol/server";
import { z } from "zod";
import type { EngineListener, RunSummary } from "../engine/options.js";
import type { AnyRecord } from "../journal/vocabulary.js";
import type { ApprovalPort } from "../runtime/ports.js";

export const RUN_TOOL = "harness_run";

/** A run a client asks for: a goal, and the host-side checks that decide whether it is done. */
export interface RunRequest {
  goal: string;
  accept: string[];
}

/** Starts a session with the server's model options (built by the CLI, which owns the setup). */
export type RunStarter = (
  request: RunRequest,
  listener: EngineListener,
  signal: AbortSignal,
) => Promise<RunSummary>;

/**
 * Who answers an `ask` inside a harness_run session: nobody, and the result says why. The whole
 * session runs inside one tools/call; in the 2026-07-28 protocol a server asks only by ending
 * the call with input_required, which would end the session's call, and the push-style
 * elicitation of older revisions is deprecated. So the server's own policy must allow what a
 * harness_run session needs.
 */
export const RUN_ASK_DENIED =
  "harness_run sessions cannot ask the MCP client for approval (the session runs inside one tools/call); " +
  "what needs approval is denied. The server's operator can allow it with --write allow, --shell allow or --allow rules";

export const runToolApprover: ApprovalPort = {
  request: async () => ({ decision: "deny", scope: "once", by: "mcp-client", reason: RUN_ASK_DENIED }),
};

const RunArguments = z
  .object({
    goal: z.string().trim().min(1).max(100_000),
    accept: z.array(z.string().min(1).max(10_000)).max(32).optional(),
  })
  .strict();

export const RUN_TOOL_SPEC: Tool = {
  name: RUN_TOOL,
  description:
    "Run a harness agent session in the workspace: the server's model works on the goal with the governed tools, " +
    "then every acceptance command runs on the host. Returns the outcome: status (verified only when every " +
    "acceptance command exited 0), session id (its journal is a resource), and the model's answer.",
  inputSchema: {
    type: "object",
    properties: {
      goal: { type: "string", description: "what the agent should do" },
      accept: {
        type: "array",
        items: { type: "string" },
        description: "acceptance commands run in the workspace after the agent stops; all must exit 0",
      },
    },
    required: ["goal"],
    additionalProperties: false,
  },
  // A whole agent session: it may change anything the server's policy lets it, runs commands,
  // and talks to the model's provider; running it twice is two sessions.
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
};

/** What a progress notification says about a journal record, or nothing for records not worth one. */
function progressMessage(record: AnyRecord): string | undefined {
  switch (record.type) {
    case "session.started":
      return `session ${record.data.session_id} started`;
    case "model.reply":
      return record.data.calls.length > 0
        ? `model step ${record.data.step}: ${record.data.calls.map((call) => call.name).join(", ")}`
        : `model step ${record.data.step}: answered`;
    case "tool.result":
      return `${record.data.name}: ${record.data.status}`;
    case "acceptance.checked":
      return `acceptance ${record.data.accepted ? "passed" : "failed"}`;
    default:
      return undefined;
  }
}

/**
 * harness_run: validate the arguments, run the session, report its outcome. With a progress
 * token, each step of the run is a progress notification while it runs.
 */
export async function callRunTool(
  args: unknown,
  starter: RunStarter | undefined,
  progress: ((progress: number, message: string) => Promise<void>) | undefined,
  signal: AbortSignal,
  /** The run's journal now exists (its session id): the client's resource list changed. */
  onJournal?: (sessionId: string) => void,
): Promise<CallToolResult> {
  if (!starter) {
    return failure(
      "harness mcp serve was started without a model: restart it with --script FILE, --provider NAME --model ID, or --profile NAME " +
        "(or set default_profile in the user config: harness init) to use harness_run",
    );
  }
  const parsed = RunArguments.safeParse(args);
  if (!parsed.success) {
    const issues = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "arguments"}: ${issue.message}`,
    );
    return failure(`invalid arguments for ${RUN_TOOL}: ${issues.join("; ")}`);
  }
  let steps = 0;
  // Notifications still being sent: the result waits for them, because a client drops progress
  // that arrives after the response to its request.
  const sending: Promise<void>[] = [];
  const listener: EngineListener = {
    record: (record) => {
      if (record.type === "session.started") onJournal?.(record.data.session_id);
      const message = progressMessage(record);
      if (message === undefined || !progress) return;
      steps += 1;
      sending.push(progress(steps, message).catch(() => undefined));
    },
  };
  let summary: RunSummary;
  try {
    summary = await starter({ goal: parsed.data.goal, accept: parsed.data.accept ?? [] }, listener, signal);
  } catch (error) {
    return failure(`the run could not start: ${error instanceof Error ? error.message : "error"}`);
  } finally {
    await Promise.all(sending);
  }
  const outcome = {
    status: summary.status,
    reason: summary.reason,
    message: summary.message,
    session: summary.session,
    answer: summary.answer,
    model_requests: summary.model_requests,
    tool_calls: summary.tool_calls,
  };
  const lines = [
    `status: ${summary.status}${summary.reason ? ` (${summary.reason})` : ""}`,
    ...(summary.message ? [`why: ${summary.message}`] : []),
    `session: ${summary.session}`,
    ...(summary.answer ? [`answer: ${summary.answer}`] : []),
  ];
  return { content: [{ type: "text", text: lines.join("\n") }], structuredContent: outcome };
}

function failure(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}
