import { homedir } from "node:os";
import type { LoadedConfig } from "../config/load.js";
import { userConfigPath } from "../config/load.js";
import { mcpServerSettings } from "../config/sections.js";
import { currentBinding, judgeApproval, type RecordedApproval } from "../mcp/approval.js";
import {
  callDeadlineMs,
  DEFAULT_STARTUP_TIMEOUT_MS,
  DEFAULT_TOOL_TIMEOUT_MS,
  isStdioDefinition,
  type McpStdioDefinition,
} from "../mcp/config.js";
import type { McpConnection } from "../mcp/connection.js";
import type { StdioHost } from "../mcp/process-transport.js";
import { type SelectedServer, type ServerSelection, selectServers } from "../mcp/selection.js";
import type { ServerStartProgress } from "../mcp/startup.js";
import type { McpServerTools, McpToolEntry, UnavailableMcpTool } from "../mcp/tool.js";
import type { McpToolInfo } from "../mcp/tool-info.js";
import { MAX_SURFACE_BYTES_TOTAL, McpListingRefused } from "../mcp/tool-listing.js";
import { escapeForTerminal, escapeLines } from "../shared/terminal-text.js";
import { harnessVersion } from "./version.js";

/**
 * The user's MCP servers for one `harness run`/`resume`: which may start (the user's own; a
 * project's proposals only with the user's approval of their exact definition, recorded in the
 * user config under `mcp_approvals`), started together before any model request, their tools
 * listed, and all of them stopped when the run ends.
 */

/**
 * The MCP client: the SDK, its transports and JSON Schema validator (about 1 MB of code and its
 * heap), loaded the first time a session has a server to start, never by a run without one.
 */
interface McpClientModules {
  connection: typeof import("../mcp/connection.js");
  errors: typeof import("../mcp/errors.js");
  startup: typeof import("../mcp/startup.js");
  tool: typeof import("../mcp/tool.js");
}

let clientModules: Promise<McpClientModules> | undefined;

function loadMcpClient(): Promise<McpClientModules> {
  clientModules ??= Promise.all([
    import("../mcp/connection.js"),
    import("../mcp/errors.js"),
    import("../mcp/startup.js"),
    import("../mcp/tool.js"),
  ]).then(([connection, errors, startup, tool]) => ({ connection, errors, startup, tool }));
  return clientModules;
}

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

/**
 * The servers the configs define, split by whether they may start; a proposal's approval is judged
 * for the workspace at `workspaceRoot` (its real path) and the files its definition names now.
 */
export function mcpSelection(config: LoadedConfig, workspaceRoot: string): ServerSelection {
  const { user, proposed } = mcpServerSettings(config);
  const approvals = userApprovals(config);
  return selectServers(user, proposed, (name, definition) =>
    judgeApproval(
      Object.hasOwn(approvals, name) ? approvals[name] : undefined,
      currentBinding(definition, workspaceRoot),
    ),
  );
}

/** `mcp_approvals` of the user config: a project's own file cannot approve its proposals. */
export function userApprovals(config: LoadedConfig): Readonly<Record<string, RecordedApproval>> {
  return config.user?.config.mcp_approvals ?? {};
}

/** The command that approves the proposal `name` of the workspace at `workspaceRoot`, as a user pastes it. */
export function approveCommand(name: string, workspaceRoot: string): string {
  return `harness mcp approve ${shellQuote(name)} --workspace ${shellQuote(workspaceRoot)}`;
}

/** What the user is told about a proposal that was not started: why, and exactly how to approve it. */
export function unapprovedNote(server: SelectedServer, workspaceRoot: string): string {
  const why = server.verdict?.approved === false ? server.verdict.reason : "you have not approved it";
  return (
    `the project proposes MCP server "${server.name}"; it was not started: ${why}. ` +
    `Review it and approve it with: ${approveCommand(server.name, workspaceRoot)}`
  );
}

/**
 * What runs before every start of a proposal (first start, restart, reconnect): its approval judged
 * again, so a file or definition changed since the selection is refused, not started.
 */
export function approvalGate(
  server: SelectedServer,
  workspaceRoot: string,
  { McpStartError }: McpClientModules["errors"],
): (() => void) | undefined {
  const judge = server.approval;
  if (judge === undefined) return undefined;
  return () => {
    const verdict = judge();
    if (verdict.approved) return;
    throw new McpStartError(
      server.name,
      "approval",
      `MCP server "${server.name}" was not started: ${verdict.reason}. ` +
        `Review it and approve it with: ${approveCommand(server.name, workspaceRoot)}`,
      undefined,
    );
  };
}

/**
 * The fix for a server whose package runner could not download its package (mcp/offline-start.ts),
 * as commands that work as printed: for the user's own server, re-adding it with --network (when
 * every setting of its definition has a flag, and it sets no variables, which are not echoed); the
 * config key otherwise; or installing the package on the host, which the sandbox shows (/usr).
 */
/** How long a package runner that downloads at every start may take to start (the hint's). */
const DOWNLOAD_STARTUP_MS = 120_000;

export function offlineFix(server: SelectedServer, runner: { runner: string; pkg: string }): string {
  const { definition } = server;
  if (!isStdioDefinition(definition)) return "";
  const lines = ["Fix it in one of two ways:"];
  const file = userConfigPath(process.env, homedir());
  // Its sandbox's HOME is private and empty, so the runner downloads at every start: give it time.
  const downloading = {
    ...definition,
    network: true,
    startup_timeout_ms: Math.max(definition.startup_timeout_ms, DOWNLOAD_STARTUP_MS),
  };
  const readd = server.source === "user" ? addCommand(server.name, downloading) : undefined;
  if (definition.network) {
    lines.push("  - the network is allowed, so check that this machine can reach the package registry");
  } else if (readd !== undefined) {
    lines.push(
      `  - let it download: harness mcp remove ${shellQuote(server.name)} && ${readd}`,
      `    (or set "network": true and "startup_timeout_ms": ${downloading.startup_timeout_ms} in mcp_servers.${server.name} of ${file}; it downloads the package at every start)`,
    );
  } else {
    lines.push(
      server.source === "user"
        ? `  - let it download: set "network": true and "startup_timeout_ms": ${downloading.startup_timeout_ms} in mcp_servers.${server.name} of ${file}`
        : `  - let it download: the project's definition needs "network": true (then approve it again)`,
    );
  }
  const npm = ["npx", "npm exec", "bunx", "bun x", "pnpm dlx", "yarn dlx"].includes(runner.runner);
  lines.push(
    npm
      ? `  - or install it once, outside harness: npm install -g ${shellQuote(runner.pkg)}; then make the program it installs the command, without ${runner.runner}: harness mcp remove ${shellQuote(server.name)} && harness mcp add ${shellQuote(server.name)} -- PROGRAM ARGS... (npm ls -g --parseable ${shellQuote(runner.pkg)} shows where it is; a program outside /usr needs --read-path DIR)`
      : `  - or install ${shellQuote(runner.pkg)} once, outside harness, and make the program it installs the command (harness mcp remove ${shellQuote(server.name)} && harness mcp add ${shellQuote(server.name)} --read-path DIR -- PROGRAM ARGS..., DIR where it was installed)`,
  );
  return lines.join("\n");
}

/**
 * The `harness mcp add` command that makes this definition, or undefined when
 * a setting has no flag (tool lists, tool timeout) or it sets variables (their values may be secrets).
 */
export function addCommand(name: string, definition: McpStdioDefinition): string | undefined {
  if (
    definition.enabled_tools !== undefined ||
    definition.disabled_tools !== undefined ||
    Object.keys(definition.env).length > 0 ||
    definition.tool_timeout_ms !== DEFAULT_TOOL_TIMEOUT_MS
  )
    return undefined;
  const flags: string[] = [];
  if (definition.network) flags.push("--network");
  for (const name of definition.pass_env) flags.push("--pass-env", name);
  if (definition.cwd !== undefined) flags.push("--cwd", definition.cwd);
  if (definition.sandbox !== "workspace-write") flags.push("--sandbox", definition.sandbox);
  for (const entry of definition.read_paths) flags.push("--read-path", entry);
  if (definition.required) flags.push("--required");
  if (definition.trusted) flags.push("--trust");
  if (definition.startup_timeout_ms !== DEFAULT_STARTUP_TIMEOUT_MS)
    flags.push("--startup-timeout", String(definition.startup_timeout_ms));
  return ["harness", "mcp", "add", name, ...flags, "--", definition.command, ...definition.args]
    .map(shellQuote)
    .join(" ");
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
  readonly #listings = new Map<string, { tools: readonly McpToolInfo[]; bytes: number }>();
  /** Servers whose last listing was refused (past a bound), with the reason. */
  readonly #refused = new Map<string, string>();

  /**
   * Counts listings taken and refused: a surface built from an older count is out of date, even
   * when another session sharing these servers (a sub-agent) took the listing.
   */
  #generation = 0;

  private constructor(
    readonly connections: readonly McpConnection[],
    /** Loaded when there is a server to start; a session without one never loads the client. */
    private readonly client: McpClientModules | undefined,
  ) {}

  get generation(): number {
    return this.#generation;
  }

  /**
   * Start the selected servers concurrently and list the tools of those that came up. Throws
   * McpRequiredServerError (every server stopped) when a required one failed, or its listing was
   * refused. `signal` abandons the listing (harness is stopping).
   */
  static async start(
    selected: readonly SelectedServer[],
    host: StdioHost,
    onProgress: (progress: ServerStartProgress) => void,
    signal?: AbortSignal,
  ): Promise<{ servers: McpServers; notices: string[] }> {
    if (selected.length === 0) return { servers: new McpServers([], undefined), notices: [] };
    const client = await loadMcpClient();
    const { McpConnection } = client.connection;
    const { McpRequiredServerError, startServers } = client.startup;
    const connections = selected.map((server) => {
      const gate = approvalGate(server, host.workspace, client.errors);
      return new McpConnection({
        name: server.name,
        definition: server.definition,
        stdio: host,
        environment: host.executor.environment,
        clientInfo: { name: "harness", version: harnessVersion() },
        ...(gate ? { beforeStart: gate } : {}),
        offlineFix: (runner) => offlineFix(server, runner),
      });
    });
    const outcomes = await startServers(connections, onProgress);
    const servers = new McpServers(
      connections.filter((_, index) => outcomes[index]?.ok === true),
      client,
    );
    const notices: string[] = [];
    try {
      for (const connection of servers.connections) {
        try {
          await servers.#list(connection, signal);
        } catch (error) {
          if (connection.definition.required)
            throw new McpRequiredServerError([
              client.errors.startFailure(connection.name, "handshake", error, undefined),
            ]);
          // A refused listing is reported with the surface's unavailable tools (unavailableNote).
          if (!(error instanceof McpListingRefused))
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

  /**
   * Re-list the tools of servers that announced a change (or were restarted). Whether any did. A
   * listing refused now takes the server's tools away (with the reason); one that failed otherwise
   * keeps its last tools (calls to them fail on their own).
   */
  async refresh(signal?: AbortSignal): Promise<boolean> {
    let changed = false;
    for (const connection of this.connections) {
      if (signal?.aborted) break;
      if (!connection.toolsChanged || connection.state !== "ready") continue;
      try {
        await this.#list(connection, signal);
        changed = true;
      } catch (error) {
        if (error instanceof McpListingRefused) changed = true;
      }
    }
    return changed;
  }

  /** List one server's tools within its bounds and what is left of the session's; record the outcome. */
  async #list(connection: McpConnection, signal: AbortSignal | undefined): Promise<void> {
    let others = 0;
    for (const [name, listing] of this.#listings) if (name !== connection.name) others += listing.bytes;
    try {
      const tools = await connection.listTools({
        maxBytes: Math.max(0, MAX_SURFACE_BYTES_TOTAL - others),
        ...(signal ? { signal } : {}),
      });
      const bytes = tools.reduce((sum, tool) => sum + Buffer.byteLength(JSON.stringify(tool)), 0);
      this.#listings.set(connection.name, { tools, bytes });
      this.#refused.delete(connection.name);
      this.#generation += 1;
    } catch (error) {
      if (error instanceof McpListingRefused) {
        this.#listings.delete(connection.name);
        this.#refused.set(connection.name, error.reason);
        this.#generation += 1;
      }
      throw error;
    }
  }

  /** Every server's current tools as harness tools, and the listed tools that cannot be offered. */
  tools(): { entries: McpToolEntry[]; unavailable: UnavailableMcpTool[] } {
    // Nothing was started, so nothing was listed or refused.
    if (this.client === undefined) return { entries: [], unavailable: [] };
    const servers: McpServerTools[] = this.connections.flatMap((connection) => {
      const listing = this.#listings.get(connection.name);
      if (listing === undefined) return [];
      const { definition } = connection;
      return [
        {
          server: connection.name,
          trusted: definition.trusted,
          toolTimeoutMs: definition.tool_timeout_ms,
          callDeadlineMs: callDeadlineMs(definition),
          caller: connection,
          tools: listing.tools,
          ...(definition.enabled_tools ? { enabledTools: definition.enabled_tools } : {}),
          ...(definition.disabled_tools ? { disabledTools: definition.disabled_tools } : {}),
        },
      ];
    });
    const built = this.client.tool.buildMcpTools(servers);
    // A refused listing is one entry for the whole server: `*` stands for every tool it listed.
    for (const [server, reason] of this.#refused)
      built.unavailable.push({ server, tool: "*", reason: `its tool list was refused: ${reason}` });
    return built;
  }

  /** Stop every server (its whole process tree). */
  async close(): Promise<void> {
    await Promise.all(this.connections.map((connection) => connection.close()));
  }
}

/** A listed tool that is not offered, as a notice for the user. */
export function unavailableNote(tool: UnavailableMcpTool): string {
  if (tool.tool === "*") return `MCP server "${tool.server}" offers no tools: ${tool.reason}`;
  return `MCP tool ${JSON.stringify(tool.tool)} of server "${tool.server}" is not offered: ${tool.reason}`;
}
