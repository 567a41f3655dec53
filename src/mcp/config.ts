import { homedir } from "node:os";
import path from "node:path";
import { z } from "zod";
import { readPathProblem } from "../sandbox/host-view.js";
import { CodedError } from "../shared/coded-error.js";
import { digestOf } from "../shared/hash.js";
import { once } from "../shared/lazy-record.js";

/**
 * One MCP server as the user configures it under `mcp_servers.NAME`: a stdio server harness
 * starts itself ({command, args, env, pass_env, cwd, sandbox, network, read_paths}) or a remote
 * one ({url, headers, bearer_token_env, transport}), plus the settings both share. Parsing is
 * strict: an unknown or misspelt key is an error naming the server and the field, never ignored.
 */

export const DEFAULT_STARTUP_TIMEOUT_MS = 30_000;
export const DEFAULT_TOOL_TIMEOUT_MS = 120_000;
const MAX_STARTUP_TIMEOUT_MS = 600_000;
const MAX_TOOL_TIMEOUT_MS = 3_600_000;

/**
 * Server names become part of tool names (`mcp__NAME__TOOL`), so they are plain identifiers and
 * never contain the `__` separator.
 */
const SERVER_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$/;
const MAX_SERVER_NAME = 32;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** RFC 9110 field-name token characters. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const sharedShape = () => ({
  /** How long start() may take (spawn or connect, then the initialize handshake). */
  startup_timeout_ms: z.number().int().min(1).max(MAX_STARTUP_TIMEOUT_MS).default(DEFAULT_STARTUP_TIMEOUT_MS),
  /** How long one tool call may take before it is abandoned (and cancelled on the server). */
  tool_timeout_ms: z.number().int().min(1).max(MAX_TOOL_TIMEOUT_MS).default(DEFAULT_TOOL_TIMEOUT_MS),
  /** A required server that cannot start stops the run before any model request. */
  required: z.boolean().default(false),
  /** Only these tools (raw server names) are offered; default all. */
  enabled_tools: z.array(z.string().min(1)).optional(),
  /** These tools (raw server names) are never offered; applied after enabled_tools. */
  disabled_tools: z.array(z.string().min(1)).optional(),
  /**
   * Whether the server's own tool annotations (read-only, idempotent...) are believed, and its
   * results taken as the user's own (an untrusted server's are labelled as untrusted data, and
   * after them a call that widens what leaves the machine asks a person).
   */
  trusted: z.boolean().default(false),
  /**
   * Its tools are offered from the first request even when tools are deferred (never deferred).
   * Optional, not defaulted: a definition's digest (what an approval binds to) stays as it was.
   */
  always_load: z.boolean().optional(),
});

/**
 * The two definition schemas, built on first use: a run with no MCP server configured never
 * parses a definition, and zod builds a schema's whole object graph when it is declared.
 */
const schemas = once(() => ({ stdio: stdioSchemaOf(), http: httpSchemaOf() }));

const stdioSchemaOf = () =>
  z.strictObject({
    /** An executable path, or a name looked up on PATH. */
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    /** Variables set for the server, with these values (beyond the filtered environment). */
    env: z.record(z.string().regex(ENV_NAME, "not a variable name"), z.string()).default({}),
    /** Names of harness's own variables passed through as they are (credentials included: your decision). */
    pass_env: z.array(z.string().regex(ENV_NAME, "not a variable name")).default([]),
    /** Working directory: absolute, or relative to the workspace. Default the workspace. */
    cwd: z.string().min(1).optional(),
    /** The server's sandbox profile (as for shell commands); default workspace-write. */
    sandbox: z.enum(["workspace-write", "read-only", "off"]).default("workspace-write"),
    /** Whether a sandboxed server may reach the network; default loopback only. */
    network: z.boolean().default(false),
    /**
     * Extra host paths the sandboxed server may read, e.g. where it is installed: absolute or
     * `~/...`, under the same rules as the user config's `sandbox.read_paths`.
     */
    read_paths: z
      .array(
        z.string().superRefine((value, context) => {
          const problem = readPathProblem(expandHome(value, homedir()), [homedir()]);
          if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
        }),
      )
      .default([]),
    ...sharedShape(),
  });

const httpSchemaOf = () =>
  z.strictObject({
    url: z
      .string()
      .url()
      .refine((value) => /^https?:\/\//i.test(value), "must be an http:// or https:// URL"),
    headers: z.record(z.string().regex(HEADER_NAME, "not a header name"), z.string()).default({}),
    /** The variable holding a bearer token, read when connecting; the token is never stored. */
    bearer_token_env: z.string().regex(ENV_NAME, "not a variable name").optional(),
    /** `auto`: Streamable HTTP, falling back to the older HTTP+SSE transport when refused. */
    transport: z.enum(["auto", "streamable-http", "sse"]).default("auto"),
    ...sharedShape(),
  });

export type McpStdioDefinition = z.output<ReturnType<typeof stdioSchemaOf>>;
export type McpHttpDefinition = z.output<ReturnType<typeof httpSchemaOf>>;
export type McpServerDefinition = McpStdioDefinition | McpHttpDefinition;

export function isStdioDefinition(definition: McpServerDefinition): definition is McpStdioDefinition {
  return "command" in definition;
}

/** A server definition that cannot be used; `server` and `field` say where, `problem` what. */
export class McpConfigError extends CodedError<"MCP_CONFIG_INVALID"> {
  override readonly name = "McpConfigError";
  constructor(
    readonly source: string,
    readonly server: string,
    readonly field: string | undefined,
    readonly problem: string,
  ) {
    const where = field === undefined ? `mcp_servers.${server}` : `mcp_servers.${server}.${field}`;
    super("MCP_CONFIG_INVALID", `${source}: ${where}: ${problem}`);
  }
}

/**
 * Parse one server definition. `source` labels the config file in errors. Defaults are filled
 * in, so the parsed definition says everything about how the server runs.
 */
export function parseMcpServer(name: string, raw: unknown, source: string): McpServerDefinition {
  if (name.length > MAX_SERVER_NAME || !SERVER_NAME.test(name)) {
    throw new McpConfigError(
      source,
      name,
      undefined,
      `a server name is 1-${MAX_SERVER_NAME} letters, digits, "-" or single "_" (it becomes part of tool names)`,
    );
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new McpConfigError(source, name, undefined, "a server definition must be a JSON object");
  }
  const hasCommand = "command" in raw;
  const hasUrl = "url" in raw;
  if (hasCommand === hasUrl) {
    throw new McpConfigError(
      source,
      name,
      undefined,
      "a server needs exactly one of `command` (a stdio server harness starts) or `url` (a remote server)",
    );
  }
  const result = (hasCommand ? schemas().stdio : schemas().http).safeParse(raw);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const field = issue.path.length === 0 ? undefined : issue.path.map(String).join(".");
    // A bad record key (a variable or header name) reports its own reason one level down.
    let problem = issue.code === "invalid_key" ? (issue.issues[0]?.message ?? issue.message) : issue.message;
    if (issue.code === "unrecognized_keys") {
      const keys = issue.keys.map((key) => JSON.stringify(key)).join(", ");
      const hint = hasUrl ? " (sandbox, network, env and cwd apply to stdio servers only)" : "";
      problem = `unknown key ${keys}${hint}`;
    }
    throw new McpConfigError(source, name, field, problem);
  }
  return result.data;
}

/** Parse the `mcp_servers` section of a config file: an object of named definitions. */
export function parseMcpServers(raw: unknown, source: string): Record<string, McpServerDefinition> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new McpConfigError(source, "*", undefined, "`mcp_servers` must be an object of named servers");
  }
  const servers: Record<string, McpServerDefinition> = {};
  for (const [name, definition] of Object.entries(raw))
    servers[name] = parseMcpServer(name, definition, source);
  return servers;
}

/**
 * The identity of a definition: SHA-256 of its canonical JSON (RFC 8785), defaults filled in.
 * This is what a user approves for a server a project proposes; any change to the definition
 * (command, arguments, variables, URL, sandbox...) needs a new approval. Writing a default
 * explicitly or leaving it out is the same definition.
 */
export function definitionDigest(definition: McpServerDefinition): string {
  return digestOf(definition);
}

/** How long a call with progress may last at most, whatever progress it reports. */
export const CALL_DEADLINE_FACTOR = 10;

/**
 * The most time one call may take in all: a server that keeps reporting progress extends the
 * call's timeout (tool_timeout_ms without word from it) up to this bound, ten times the timeout
 * and never past an hour.
 */
export function callDeadlineMs(definition: McpServerDefinition): number {
  return Math.min(definition.tool_timeout_ms * CALL_DEADLINE_FACTOR, MAX_TOOL_TIMEOUT_MS);
}

/** Whether the server's tool `rawName` is offered under the definition's enabled/disabled lists. */
export function toolEnabled(definition: McpServerDefinition, rawName: string): boolean {
  if (definition.enabled_tools !== undefined && !definition.enabled_tools.includes(rawName)) return false;
  return !(definition.disabled_tools ?? []).includes(rawName);
}

/** `~` and `~/...` in a read path, as the user config's `sandbox.read_paths` spells them. */
export function expandHome(entry: string, home: string): string {
  if (entry === "~") return home;
  return entry.startsWith("~/") ? path.join(home, entry.slice(2)) : entry;
}
