import { RequestError } from "@agentclientprotocol/sdk";
import { definitionDigest, type McpServerDefinition, parseMcpServer } from "../mcp/config.js";
import type { JsonObject } from "../shared/json.js";

/** The MCP servers an editor passed, as harness server definitions, and what the session records of them. */
export interface EditorServers {
  definitions: Record<string, McpServerDefinition>;
  recorded: JsonObject[];
}

/**
 * The servers of a `session/new` or `session/load` (unknown until parsed): stdio ones become
 * definitions like the user config's own (default sandbox, filtered environment plus the
 * variables the editor set); HTTP and SSE ones are refused, as `initialize` said.
 */
export function editorServers(servers: readonly unknown[]): EditorServers {
  const definitions: Record<string, McpServerDefinition> = {};
  const recorded: JsonObject[] = [];
  for (const server of servers) {
    const given = (typeof server === "object" && server !== null ? server : {}) as Record<string, unknown>;
    if (given.type === "http" || given.type === "sse" || typeof given.command !== "string")
      throw RequestError.invalidParams(
        { server: typeof given.name === "string" ? given.name : null },
        "harness acp starts stdio MCP servers only (HTTP and SSE servers: add them with harness mcp add)",
      );
    const name = serverName(given.name, Object.keys(definitions));
    const env: Record<string, string> = {};
    for (const entry of Array.isArray(given.env) ? given.env : []) {
      const { name: key, value } = (entry ?? {}) as { name?: unknown; value?: unknown };
      if (typeof key === "string" && typeof value === "string") env[key] = value;
    }
    let definition: McpServerDefinition;
    try {
      definition = parseMcpServer(
        name,
        { command: given.command, args: given.args ?? [], env },
        "the editor",
      );
    } catch (error) {
      throw RequestError.invalidParams(
        { server: name },
        error instanceof Error ? error.message : String(error),
      );
    }
    definitions[name] = definition;
    // The digest, never the environment's values (an editor may pass a token there).
    recorded.push({ name, command: given.command, digest: definitionDigest(definition) });
  }
  return { definitions, recorded };
}

/** A name usable in tool names (`mcp__NAME__TOOL`): letters, digits, single dashes and underscores. */
function serverName(given: unknown, taken: readonly string[]): string {
  const base =
    (typeof given === "string" ? given : "editor")
      .replace(/[^A-Za-z0-9-]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 28) || "editor";
  let name = base;
  for (let n = 2; taken.includes(name); n++) name = `${base}-${n}`;
  return name;
}
