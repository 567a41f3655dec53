import {
  type CallToolResult,
  CLIENT_CAPABILITIES_META_KEY,
  type InputRequiredResult,
  Server,
  type ServerContext,
  type Tool,
  type ToolAnnotations,
} from "@modelcontextprotocol/server";
import type { ToolSpec } from "../protocol/types.js";
import type { PermissionPort } from "../runtime/ports.js";
import { projectForModel } from "../runtime/projection.js";
import type { ToolResult } from "../runtime/result.js";
import type { JsonObject } from "../shared/json.js";
import type { ClientScope } from "./client-scope.js";
import { type JournalAccess, listJournals, readJournal } from "./resources.js";
import { callRunTool, RUN_TOOL, RUN_TOOL_SPEC, type RunStarter } from "./run-tool.js";
import type { RecordedResult, ServedSession } from "./served-session.js";

export interface McpServeOptions {
  /**
   * The governed tools, as the session's frozen snapshot describes them, each with the
   * annotations its effect class gives it (annotations.ts).
   */
  tools: readonly (ToolSpec & { annotations?: ToolAnnotations })[];
  /** The workspace's state directory (its journals are the resources). */
  harnessDir: string;
  /** The server's policy: what a journal holds must pass it to be served (resources.ts). */
  permissions: PermissionPort;
  /** harness_run; undefined when the server was started without a model. */
  run?: RunStarter;
  version: string;
}

/**
 * The MCP face of harness: a factory of SDK `Server`s for one client's scope (stdio makes one
 * per connection, a 2025-era HTTP session one for its life, the stateless generation one per
 * request). Instances of one scope share its served session and approval desk, so a call and
 * the retry that answers its approval meet whichever instance receives them.
 */
export function mcpServerFactory(options: McpServeOptions): (scope: ClientScope) => Server {
  const governed = new Set(options.tools.map((tool) => tool.name));
  const listed: Tool[] = [
    ...options.tools.map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.input_schema as Tool["inputSchema"],
      ...(tool.annotations ? { annotations: tool.annotations } : {}),
    })),
    RUN_TOOL_SPEC,
  ];

  return (scope: ClientScope) => {
    const journals: JournalAccess = {
      harnessDir: options.harnessDir,
      permissions: options.permissions,
      started: () => scope.started(),
    };
    const server = new Server(
      { name: "harness", version: options.version },
      {
        capabilities: { tools: {}, resources: { listChanged: true } },
        instructions:
          "Tools run under harness's policy, sandbox and journal: every call is validated, authorized " +
          "(approvals are asked through elicitation), and recorded in this server's session.",
      },
    );
    server.setRequestHandler("tools/list", async () => ({ tools: listed }));
    server.setRequestHandler("tools/call", async (request, ctx) => {
      const name = request.params.name;
      const args = (request.params.arguments ?? {}) as JsonObject;
      if (name === RUN_TOOL) {
        // Sent on this request's own stream, so an HTTP client hears it as a stdio one does.
        const listChanged = (sessionId: string) => {
          scope.addStarted(sessionId);
          void ctx.mcpReq.notify({ method: "notifications/resources/list_changed" }).catch(() => undefined);
        };
        return callRunTool(args, options.run, progressOf(ctx), ctx.mcpReq.signal, listChanged);
      }
      if (!governed.has(name)) {
        return errorText(
          `unknown tool "${name}"; the tools are: ${[...listed.map((tool) => tool.name)].join(", ")}`,
        );
      }
      let session: ServedSession;
      try {
        session = await scope.session();
      } catch (error) {
        return errorText(
          `no session to run the call in: ${error instanceof Error ? error.message : "error"}`,
        );
      }
      const served = { session, desk: scope.desk };
      const state = ctx.mcpReq.requestState();
      if (typeof state === "string") {
        const answered = scope.desk.answer(state, name, args, ctx.mcpReq.inputResponses);
        if ("error" in answered) return errorText(answered.error);
        return follow(served, answered.callId, name, args, ctx.mcpReq.signal);
      }
      const stopped = session.stopped;
      if (stopped) return errorText(stopped);
      const callId = session.submit(name, args, canElicit(server, ctx));
      return follow(served, callId, name, args, ctx.mcpReq.signal);
    });
    server.setRequestHandler("resources/list", async () => listJournals(journals));
    server.setRequestHandler("resources/read", async (request) => readJournal(journals, request.params.uri));
    return server;
  };

  /** Waits for what happens to a submitted call: its recorded result, or an approval to ask. */
  async function follow(
    served: Served,
    callId: string,
    name: string,
    args: JsonObject,
    cancelled: AbortSignal,
  ): Promise<CallToolResult | InputRequiredResult> {
    // The client's notifications/cancelled for this request stops the governed call itself.
    const onCancel = () => served.session.cancel(callId);
    if (cancelled.aborted) onCancel();
    else cancelled.addEventListener("abort", onCancel, { once: true });
    try {
      return await settle(served, callId, name, args);
    } finally {
      cancelled.removeEventListener("abort", onCancel);
    }
  }

  async function settle(
    served: Served,
    callId: string,
    name: string,
    args: JsonObject,
  ): Promise<CallToolResult | InputRequiredResult> {
    const next = await served.session.next(callId);
    if (next.kind === "stopped") return errorText(next.why);
    if (next.kind === "approval") return served.desk.ask(callId, name, args, next.ask);
    return resultFor(next.result, served.session.sessionId);
  }
}

/** The session a call runs in and the desk its approval questions wait at. */
interface Served {
  session: ServedSession;
  desk: ClientScope["desk"];
}

/** Whether the client can be asked: declared at initialize (2025 era) or on the request (2026 era). */
function canElicit(server: Server, ctx: ServerContext): boolean {
  if (server.getClientCapabilities()?.elicitation !== undefined) return true;
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const declared = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { elicitation?: unknown } | undefined;
  return declared?.elicitation !== undefined;
}

/**
 * The recorded result as the client sees it: the same observation text a model would read
 * (read_file's version line included), `isError` for anything but ok, and the facts to act on.
 */
export function resultFor(result: RecordedResult, sessionId: string): CallToolResult {
  return {
    content: [{ type: "text", text: projectForModel(result as ToolResult) }],
    structuredContent: {
      session: sessionId,
      call_id: result.call_id,
      status: result.status,
      ...(result.error_type !== undefined ? { error_type: result.error_type } : {}),
      ...(result.data !== undefined ? { data: result.data } : {}),
    },
    ...(result.status === "ok" ? {} : { isError: true }),
  };
}

function errorText(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

/** Progress notifications for the request, when its client gave a progress token. */
function progressOf(ctx: ServerContext): ((progress: number, message: string) => Promise<void>) | undefined {
  const token = ctx.mcpReq._meta?.progressToken;
  if (token === undefined) return undefined;
  return (progress, message) =>
    ctx.mcpReq.notify({
      method: "notifications/progress",
      params: { progressToken: token, progress, message },
    });
}
