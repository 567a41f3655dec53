import { z } from "zod";
import { digestOf } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";
import { ToolError } from "../tools/errors.js";
import {
  type AnyTool,
  defineTool,
  type EffectClass,
  type Idempotency,
  type ToolContext,
} from "../tools/tool.js";
import { toolFailureOf } from "./call-failure.js";
import { type CompiledInputSchema, compileInputSchema } from "./input-schema.js";
import { assignToolNames } from "./names.js";
import { McpResultError, normalizeCallResult, wellFormed } from "./results.js";

/**
 * An MCP server's tool as a harness tool: the model sees the server's schema under an
 * `mcp__SERVER__TOOL` name; arguments are validated strictly before anything is sent; the effect
 * class comes from the server's annotations only when the user marked the server trusted (an
 * untrusted server's hints are its own claims); every failure says whether the call may have
 * reached the server.
 */

/** A tool as the server listed it. */
export interface McpToolListing {
  name: string;
  title?: string;
  description?: string;
  inputSchema: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
}

export interface McpCallOptions {
  signal: AbortSignal;
  timeoutMs: number;
  /** The call's W3C traceparent (a live OpenTelemetry export): sent in the request's `_meta`. */
  traceparent?: string;
}

/** What a tool needs of its server's connection (the connection's `callTool`). */
export interface McpCaller {
  /** The CallToolResult as received; throws McpCallError when no result came back. */
  callTool(name: string, args: JsonObject, options: McpCallOptions): Promise<unknown>;
}

/** One connected server and what it listed. */
export interface McpServerTools {
  server: string;
  trusted: boolean;
  toolTimeoutMs: number;
  /**
   * The most a call may take in all when the server reports progress (each report restarts
   * toolTimeoutMs); default toolTimeoutMs. The runtime's own deadline for the call.
   */
  callDeadlineMs?: number;
  caller: McpCaller;
  tools: readonly McpToolListing[];
  /** Only these tools (raw names) are offered, when given (the config's `enabled_tools`). */
  enabledTools?: readonly string[];
  /** These tools (raw names) are never offered (the config's `disabled_tools`). */
  disabledTools?: readonly string[];
}

export interface McpToolEntry {
  tool: AnyTool;
  server: string;
  rawName: string;
  surface: SurfaceTool;
}

/** A listed tool the model is not offered, and why (to show the user; the run goes on). */
export interface UnavailableMcpTool {
  server: string;
  tool: string;
  reason: string;
}

/**
 * What the model is offered of one server tool, in a form the journal could keep (snake_case
 * JSON): a change of any of it (a new schema, description or annotations, another exposed name)
 * is a new tool version, so the engine's `tools.changed` names the tool as changed.
 */
export interface SurfaceTool extends JsonObject {
  server: string;
  /** The name the model calls it by. */
  name: string;
  /** The name on the wire. */
  raw_name: string;
  /** SHA-256 of the RFC 8785 canonical JSON of the input schema as the server sent it. */
  input_schema_sha256: string;
  /** SHA-256 of the description as the server sent it ("" when none): the model reads it too. */
  description_sha256: string;
  /** The behaviour hints the server declared (only the known ones), as sent. */
  annotations: JsonObject;
}

/** The behaviour hints of MCP's ToolAnnotations, read only when they have the right type. */
const annotationsSchema = z.object({
  title: z.string().optional().catch(undefined),
  readOnlyHint: z.boolean().optional().catch(undefined),
  destructiveHint: z.boolean().optional().catch(undefined),
  idempotentHint: z.boolean().optional().catch(undefined),
  openWorldHint: z.boolean().optional().catch(undefined),
});
export type McpAnnotations = z.infer<typeof annotationsSchema>;

export const MAX_DESCRIPTION_CHARS = 4096;
const MAX_ERROR_MESSAGE_CHARS = 4096;

/**
 * Tools for every server's listing, less those the user's enabled/disabled lists leave out. Names
 * are assigned over all servers together; a tool whose schema does not compile, or that its
 * server listed twice, is left out with the reason.
 */
export function buildMcpTools(servers: readonly McpServerTools[]): {
  entries: McpToolEntry[];
  unavailable: UnavailableMcpTool[];
} {
  const unavailable: UnavailableMcpTool[] = [];
  const ready: {
    server: McpServerTools;
    listing: McpToolListing;
    schema: CompiledInputSchema & { ok: true };
  }[] = [];
  for (const server of servers) {
    const seen = new Set<string>();
    for (const listing of server.tools) {
      // The user's choice: a tool filtered out is not offered, and not a fault to report.
      if (server.enabledTools !== undefined && !server.enabledTools.includes(listing.name)) continue;
      if (server.disabledTools?.includes(listing.name)) continue;
      const refuse = (reason: string) =>
        unavailable.push({ server: server.server, tool: listing.name, reason });
      if (seen.has(listing.name)) {
        refuse("the server lists this tool name more than once");
        continue;
      }
      seen.add(listing.name);
      const schema = compileInputSchema(listing.inputSchema);
      if (!schema.ok) refuse(schema.reason);
      else ready.push({ server, listing, schema });
    }
  }
  const names = assignToolNames(
    ready.map(({ server, listing }) => ({ server: server.server, raw: listing.name })),
  );
  const entries = ready.map(({ server, listing, schema }, index) =>
    mcpToolEntry(server, listing, schema, (names[index] as { exposed: string }).exposed),
  );
  const order = new Map(servers.map((server, index) => [server.server, index]));
  entries.sort(
    (a, b) =>
      (order.get(a.server) ?? 0) - (order.get(b.server) ?? 0) ||
      (a.tool.name < b.tool.name ? -1 : a.tool.name > b.tool.name ? 1 : 0),
  );
  return { entries, unavailable };
}

/** What a tool's annotations mean for harness: only a trusted server's hints are believed. */
export function classifyMcpTool(
  annotations: McpAnnotations,
  trusted: boolean,
): { effect: EffectClass; idempotency: Idempotency; readOnly: boolean } {
  if (!trusted) return { effect: "external_side_effect", idempotency: "non_idempotent", readOnly: false };
  // MCP's defaults for absent hints: not read-only, destructive, not idempotent, open world.
  const readOnly = annotations.readOnlyHint === true;
  const openWorld = annotations.openWorldHint !== false;
  // A read-only tool of a server the user trusts is a read, whatever world it reads: it runs
  // without asking (as read_file does) and is not a change. Marking the server trusted is the
  // user's statement that its claims hold; an untrusted server's never count.
  if (readOnly) return { effect: "read_only", idempotency: "idempotent", readOnly };
  const idempotency: Idempotency = annotations.idempotentHint === true ? "idempotent" : "non_idempotent";
  if (annotations.destructiveHint !== false) return { effect: "destructive", idempotency, readOnly };
  return { effect: openWorld ? "network_write" : "external_side_effect", idempotency, readOnly };
}

function mcpToolEntry(
  server: McpServerTools,
  listing: McpToolListing,
  schema: CompiledInputSchema & { ok: true },
  exposed: string,
): McpToolEntry {
  const annotations = parseAnnotations(listing.annotations);
  const { effect, idempotency, readOnly } = classifyMcpTool(annotations, server.trusted);
  const surface: SurfaceTool = {
    server: server.server,
    name: exposed,
    raw_name: listing.name,
    input_schema_sha256: digestOf(listing.inputSchema),
    description_sha256: digestOf(listing.description ?? ""),
    annotations: annotations as JsonObject,
  };
  const resource = `mcp:${server.server}`;
  const safeToRepeat = server.trusted && (readOnly || idempotency === "idempotent");
  const input = z
    .unknown()
    .superRefine((value, context) => {
      for (const issue of schema.validate(value))
        context.addIssue({ code: "custom", path: issue.path, message: issue.message });
    })
    .transform((value) => value as JsonObject);
  const tool = defineTool<JsonObject>({
    name: exposed,
    description: describe(server, listing),
    version: `mcp-${digestOf(surface).slice(0, 16)}`,
    input,
    inputSchema: schema.modelSchema,
    effect,
    idempotency,
    timeoutMs: Math.max(server.toolTimeoutMs, server.callDeadlineMs ?? 0),
    // An untrusted server's tools may touch anything: they run alone. A trusted server's read-only
    // tools run beside each other; its other tools one at a time per server.
    resources: () =>
      !server.trusted
        ? { exclusive: true }
        : readOnly
          ? { read: [resource], write: [] }
          : { read: [], write: [resource] },
    concurrencySafe: () => server.trusted && readOnly,
    // A local server may write the workspace: its calls that run alone are compared around, so
    // what they change is recorded as theirs. A trusted server's read-only tools run beside others
    // (a comparison then could not tell whose a change is); a write by one is found as `outside`.
    ...(server.trusted && readOnly ? {} : { comparedAs: "mcp" as const }),
    approvalDetails: () => ({
      timeoutMs: server.toolTimeoutMs,
      details: {
        "MCP server": server.server,
        tool: listing.name,
        trusted: server.trusted ? "yes (effect from the server's annotations)" : "no",
      },
    }),
    execute: async (args: JsonObject, context: ToolContext) => {
      let raw: unknown;
      try {
        const traceparent = context.traceparent?.();
        raw = await server.caller.callTool(listing.name, args, {
          signal: context.signal,
          timeoutMs: server.toolTimeoutMs,
          ...(traceparent !== undefined ? { traceparent } : {}),
        });
      } catch (error) {
        throw toolFailureOf(error, exposed, server.toolTimeoutMs, safeToRepeat, server.trusted && readOnly);
      }
      const applied = server.trusted && readOnly ? false : "unknown";
      let result: Awaited<ReturnType<typeof normalizeCallResult>>;
      try {
        result = await normalizeCallResult(raw, context.artifacts);
      } catch (error) {
        if (!(error instanceof McpResultError)) throw error;
        throw new ToolError("TOOL_FAILED", `${exposed}: ${error.message}`, { operationApplied: applied });
      }
      const data: JsonObject = { server: server.server, tool: listing.name, ...result.data };
      // What a server the user has not marked trusted says is data, labelled with where it came from.
      const untrusted = server.trusted
        ? {}
        : { untrusted: `MCP server ${server.server} (tool ${listing.name})` };
      if (!result.isError) return { summary: result.summary, content: result.content, data, ...untrusted };
      const message = await errorMessage(result.content, context);
      throw new ToolError("TOOL_FAILED", message.text, {
        ...untrusted,
        operationApplied: applied,
        data: message.artifact === undefined ? data : { ...data, error_text: message.artifact },
      });
    },
  });
  return { tool, server: server.server, rawName: listing.name, surface };
}

function parseAnnotations(raw: unknown): McpAnnotations {
  const parsed = annotationsSchema.safeParse(raw);
  if (!parsed.success) return {};
  const known: McpAnnotations = {};
  for (const [key, value] of Object.entries(parsed.data))
    if (value !== undefined) Object.assign(known, { [key]: value });
  return known;
}

/** The server's description under a line saying whose it is; bounded, as it goes in every request. */
function describe(server: McpServerTools, listing: McpToolListing): string {
  const origin = `MCP tool ${JSON.stringify(listing.name)} of server ${JSON.stringify(server.server)}${
    server.trusted ? "" : " (a server the user has not marked trusted)"
  }.`;
  const title = listing.title === undefined ? "" : ` ${listing.title}.`;
  let text = wellFormed(
    `${origin}${title}${listing.description === undefined ? "" : `\n${listing.description}`}`,
  );
  if (text.length > MAX_DESCRIPTION_CHARS)
    text = `${text.slice(0, MAX_DESCRIPTION_CHARS)}… (description cut)`;
  return text;
}

/** The server's error text as the message; a long one is stored whole and the message says where. */
async function errorMessage(
  text: string,
  context: ToolContext,
): Promise<{ text: string; artifact?: JsonObject }> {
  const shown = text === "" ? "the server reported an error without text" : text;
  if (shown.length <= MAX_ERROR_MESSAGE_CHARS) return { text: shown };
  const ref = await context.artifacts.put(new TextEncoder().encode(text));
  return {
    text: `${shown.slice(0, MAX_ERROR_MESSAGE_CHARS)}… [error text cut: all ${ref.bytes} bytes are stored as artifact ${ref.id}]`,
    artifact: { id: ref.id, sha256: ref.sha256, bytes: ref.bytes },
  };
}
