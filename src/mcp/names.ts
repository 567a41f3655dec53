import { sha256Hex } from "../shared/hash.js";

/**
 * The names the model calls MCP tools by: `mcp__SERVER__TOOL`, within what every provider accepts
 * (`^[a-zA-Z0-9_-]{1,64}$`). The raw tool name is kept for the wire; only the exposed name is
 * shown to the model, used by permission rules (`allow mcp__github__*`) and journaled.
 */

export const MAX_TOOL_NAME_LENGTH = 64;
export const MCP_NAME_PREFIX = "mcp__";
const SEPARATOR = "__";
const HASH_CHARS = 8;

/** One server tool to name: the server's configured name and the tool's name as the server sent it. */
export interface McpToolRef {
  server: string;
  raw: string;
}

export interface McpToolName extends McpToolRef {
  /** The name the model sees. */
  exposed: string;
}

/** Every character outside `[A-Za-z0-9_-]` becomes `_` (one per UTF-16 code point). */
export function sanitizeNamePart(text: string): string {
  return Array.from(text, (ch) => (/^[A-Za-z0-9_-]$/.test(ch) ? ch : "_")).join("");
}

/**
 * Exposed names for all MCP tools of a session, in the order given. Deterministic whatever the
 * order (each name depends only on the set): a name that had to be changed (characters replaced
 * or cut to 64) or that two tools would share gets a suffix from the SHA-256 of its server and raw
 * name. Of tools sharing a name, one spelled exactly as its server wrote it keeps the plain name.
 */
export function assignToolNames(tools: readonly McpToolRef[]): McpToolName[] {
  const unique = new Map<string, McpToolRef>();
  for (const tool of tools) unique.set(keyOf(tool), tool);
  const plain = new Map<string, McpToolRef[]>();
  for (const tool of unique.values()) {
    const name = plainName(tool);
    plain.set(name, [...(plain.get(name) ?? []), tool]);
  }
  const assigned = new Map<string, string>();
  for (const [name, group] of plain) {
    const exact = group.filter((tool) => isExact(tool, name));
    const keeper = exact.length === 1 && name.length <= MAX_TOOL_NAME_LENGTH ? exact[0] : undefined;
    for (const tool of group)
      assigned.set(keyOf(tool), tool === keeper ? name : hashedName(tool, HASH_CHARS));
  }
  resolveLeftovers(unique, assigned);
  return tools.map((tool) => ({ ...tool, exposed: assigned.get(keyOf(tool)) as string }));
}

/** The identity of a server tool, never ambiguous (server names cannot hold NUL in config). */
function keyOf(tool: McpToolRef): string {
  return `${tool.server}\u0000${tool.raw}`;
}

function plainName(tool: McpToolRef): string {
  return `${MCP_NAME_PREFIX}${sanitizeNamePart(tool.server)}${SEPARATOR}${sanitizeNamePart(tool.raw)}`;
}

/** Whether the plain name spells the server and tool names unchanged. */
function isExact(tool: McpToolRef, name: string): boolean {
  return name === `${MCP_NAME_PREFIX}${tool.server}${SEPARATOR}${tool.raw}`;
}

/** The plain name cut to leave room for `_` + a hash of the server and raw name. */
function hashedName(tool: McpToolRef, hashChars: number): string {
  const suffix = `_${sha256Hex(keyOf(tool)).slice(0, hashChars)}`;
  return `${plainName(tool).slice(0, MAX_TOOL_NAME_LENGTH - suffix.length)}${suffix}`;
}

/**
 * A hashed name can still meet another tool's name (a raw name that happens to end in the same
 * suffix, or a cut that leaves two prefixes equal with equal short hashes): every tool on such a
 * name takes a longer hash until all names differ. Still a function of the set only.
 */
function resolveLeftovers(unique: ReadonlyMap<string, McpToolRef>, assigned: Map<string, string>): void {
  for (let hashChars = HASH_CHARS * 2; hashChars <= 32; hashChars *= 2) {
    const holders = new Map<string, string[]>();
    for (const [key, name] of assigned) holders.set(name, [...(holders.get(name) ?? []), key]);
    const clashing = [...holders.values()].filter((keys) => keys.length > 1).flat();
    if (clashing.length === 0) return;
    for (const key of clashing) assigned.set(key, hashedName(unique.get(key) as McpToolRef, hashChars));
  }
}
