import type { AnyRecord } from "../journal/vocabulary.js";
import { MCP_NAME_PREFIX } from "../mcp/names.js";

/**
 * MCP calls per server, from a session's journal: how many, how they ended, and how many ended
 * with an unknown outcome (the server may have acted; a person reviews them). The server is read
 * from the exposed name `mcp__SERVER__TOOL`: server names never contain `__`, so the first `__`
 * after the prefix ends it, even in a shortened name.
 */
export interface McpServerStats {
  server: string;
  calls: number;
  ok: number;
  errors: number;
  denied: number;
  unknown: number;
}

export function serverOfTool(name: string): string | undefined {
  if (!name.startsWith(MCP_NAME_PREFIX)) return undefined;
  const rest = name.slice(MCP_NAME_PREFIX.length);
  const end = rest.indexOf("__");
  return end > 0 ? rest.slice(0, end) : undefined;
}

export function mcpStats(records: readonly AnyRecord[]): McpServerStats[] {
  const byServer = new Map<string, McpServerStats>();
  for (const record of records) {
    if (record.type !== "tool.result") continue;
    const server = serverOfTool(record.data.name);
    if (server === undefined) continue;
    const stats = byServer.get(server) ?? { server, calls: 0, ok: 0, errors: 0, denied: 0, unknown: 0 };
    stats.calls += 1;
    if (record.data.status === "ok") stats.ok += 1;
    else if (record.data.status === "denied") stats.denied += 1;
    else if (record.data.status === "unknown") stats.unknown += 1;
    else stats.errors += 1;
    byServer.set(server, stats);
  }
  return [...byServer.values()].sort((a, b) => (a.server < b.server ? -1 : a.server > b.server ? 1 : 0));
}
