import type { LoadedConfig } from "../config/load.js";
import { mcpServerSettings } from "../config/sections.js";
import { McpConnection } from "../mcp/connection.js";
import { startFailure } from "../mcp/errors.js";
import type { StdioHost } from "../mcp/process-transport.js";
import { type SelectedServer, type ServerSelection, selectServers } from "../mcp/selection.js";
import { McpRequiredServerError, type ServerStartProgress, startServers } from "../mcp/startup.js";
import {
  buildMcpTools,
  type McpServerTools,
  type McpToolEntry,
  type UnavailableMcpTool,
} from "../mcp/tool.js";
import type { McpToolInfo } from "../mcp/tool-info.js";
import { escapeForTerminal, escapeLines } from "../shared/terminal-text.js";
import { harnessVersion } from "./version.js";

/**
 * The user's MCP servers for one `harness run`/`resume`: which may start (the user's own; a
 * project's proposals only with the user's approval of their exact definition, recorded in the
 * user config under `mcp_approvals`), started together before any model request, their tools
 * listed, and all of them stopped when the run ends.
 */

/**
 * A run's servers: the selected ones started (a required one failing throws
 * McpRequiredServerError), and notes for the proposals left out.
 */
export async function startSessionServers(
  selection: ServerSelection,
  workspaceRoot: string,
  host: StdioHost,
  progress: (line: string) => void,
): Promise<{ servers: McpServers; notices: string[] }> {
  const notices = selection.unapproved.map((server) => unapprovedNote(server, workspaceRoot));
  for (const name of selection.shadowed)
    notices.push(`the project also proposes an MCP server "${name}"; your own definition of it is used`);
  const started = await McpServers.start(selection.start, host, (event) => progress(progressLine(event)));
  return { servers: started.servers, notices: [...notices, ...started.notices] };
}

/** The servers the configs define, split by whether they may start. */
export function mcpSelection(config: LoadedConfig): ServerSelection {
  const { user, proposed } = mcpServerSettings(config);
  const approvals = userApprovals(config);
  return selectServers(user, proposed, (name, digest) => approvals[name] === digest);
}

/** `mcp_approvals` of the user config: a project's own file cannot approve its proposals. */
export function userApprovals(config: LoadedConfig): Readonly<Record<string, string>> {
  return config.user?.config.mcp_approvals ?? {};
}

/** What the user is told about a proposal that was not started: exactly how to approve it. */
export function unapprovedNote(server: SelectedServer, workspaceRoot: string): string {
  return (
    `the project proposes MCP server "${server.name}"; it was not started because you have not approved ` +
    `this definition. Review it and approve it with: harness mcp approve ${server.name} --workspace ${shellQuote(workspaceRoot)}`
  );
}

export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:@%+=-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** One progress line per server phase, for stderr. Server-provided text is escaped. */
export function progressLine(progress: ServerStartProgress): string {
  const name = escapeForTerminal(progress.server);
  switch (progress.phase) {
    case "starting":
      return `harness: MCP server ${name}: starting`;
    case "ready":
      return `harness: MCP server ${name}: ready (${progress.durationMs} ms)`;
    case "failed": {
      // The message may span lines (the server's stderr, quoted): each line escaped, then laid out.
      const [first = "", ...rest] = escapeLines(progress.error.message);
      const head = `harness: MCP server ${name}: ${progress.required ? "FAILED (required)" : "failed, continuing without it"}: ${first}`;
      return [head, ...rest.map((line) => `  ${line}`)].join("\n");
    }
  }
}

/** The started servers of a session and what each listed. */
export class McpServers {
  readonly #listings = new Map<string, readonly McpToolInfo[]>();

  private constructor(readonly connections: readonly McpConnection[]) {}

  /**
   * Start the selected servers concurrently and list the tools of those that came up. Throws
   * McpRequiredServerError (every server stopped) when a required one failed.
   */
  static async start(
    selected: readonly SelectedServer[],
    host: StdioHost,
    onProgress: (progress: ServerStartProgress) => void,
  ): Promise<{ servers: McpServers; notices: string[] }> {
    const connections = selected.map(
      (server) =>
        new McpConnection({
          name: server.name,
          definition: server.definition,
          stdio: host,
          environment: host.executor.environment,
          clientInfo: { name: "harness", version: harnessVersion() },
        }),
    );
    const outcomes = await startServers(connections, onProgress);
    const servers = new McpServers(connections.filter((_, index) => outcomes[index]?.ok === true));
    const notices: string[] = [];
    try {
      for (const connection of servers.connections) {
        try {
          servers.#listings.set(connection.name, await connection.listTools());
        } catch (error) {
          if (connection.definition.required)
            throw new McpRequiredServerError([startFailure(connection.name, "handshake", error, undefined)]);
          notices.push(
            `MCP server "${connection.name}" did not list its tools (${(error as Error).message}); its tools are not offered`,
          );
        }
      }
    } catch (error) {
      await servers.close();
      throw error;
    }
    for (const outcome of outcomes) {
      if (!outcome.ok) notices.push(`${outcome.error.message}; its tools are not offered in this run`);
    }
    return { servers, notices };
  }

  /** Re-list the tools of servers that announced a change (or were restarted). Whether any did. */
  async refresh(): Promise<boolean> {
    let changed = false;
    for (const connection of this.connections) {
      if (!connection.toolsChanged || connection.state !== "ready") continue;
      try {
        this.#listings.set(connection.name, await connection.listTools());
        changed = true;
      } catch {
        // A server that cannot list now keeps its last tools: calls to them fail on their own.
      }
    }
    return changed;
  }

  /** Every server's current tools as harness tools, and the listed tools that cannot be offered. */
  tools(): { entries: McpToolEntry[]; unavailable: UnavailableMcpTool[] } {
    const servers: McpServerTools[] = this.connections.flatMap((connection) => {
      const listing = this.#listings.get(connection.name);
      if (listing === undefined) return [];
      const { definition } = connection;
      return [
        {
          server: connection.name,
          trusted: definition.trusted,
          toolTimeoutMs: definition.tool_timeout_ms,
          caller: connection,
          tools: listing,
          ...(definition.enabled_tools ? { enabledTools: definition.enabled_tools } : {}),
          ...(definition.disabled_tools ? { disabledTools: definition.disabled_tools } : {}),
        },
      ];
    });
    return buildMcpTools(servers);
  }

  /** Stop every server (its whole process tree). */
  async close(): Promise<void> {
    await Promise.all(this.connections.map((connection) => connection.close()));
  }
}

/** A listed tool that is not offered, as a notice for the user. */
export function unavailableNote(tool: UnavailableMcpTool): string {
  return `MCP tool ${JSON.stringify(tool.tool)} of server "${tool.server}" is not offered: ${tool.reason}`;
}
