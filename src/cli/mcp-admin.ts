import { homedir } from "node:os";
import { dirname } from "node:path";
import { type LoadedConfig, userConfigPath } from "../config/load.js";
import { isStdioDefinition } from "../mcp/config.js";
import type { SelectedServer } from "../mcp/selection.js";
import { escapeForTerminal, escapeLines } from "../shared/terminal-text.js";
import { parse } from "./args.js";
import { loadConfigForCli, loadGovernance } from "./governance.js";
import { McpServers, mcpSelection, progressLine, shellQuote, userApprovals } from "./mcp-servers.js";
import { UsageError } from "./usage-error.js";
import { updateUserConfig } from "./user-config-file.js";
import { openWorkspace } from "./workspace.js";

/**
 * `harness mcp list | test | approve`: the user's view of the MCP servers the configs define,
 * a trial start of one, and the approval of a project's proposal. Everything a server or a
 * project config says is escaped before it reaches the terminal.
 */

const OPTIONS = {
  workspace: { type: "string", short: "w" },
  json: { type: "boolean" },
} as const;

interface ServerRow {
  name: string;
  source: "user" | "project";
  transport: "stdio" | "http";
  /** Whether harness run starts it (a proposal: only when approved). */
  starts: boolean;
  approved: boolean | null;
  required: boolean;
  trusted: boolean;
  digest: string;
  /** A project proposal the user's own definition of the same name overrides. */
  shadowed?: true;
}

async function configOf(args: string[]): Promise<{
  parsed: ReturnType<typeof parse<typeof OPTIONS>>;
  root: string;
  config: LoadedConfig;
}> {
  const parsed = parse(args, OPTIONS);
  const workspace = await openWorkspace(parsed.values.workspace);
  return { parsed, root: workspace.root, config: await loadConfigForCli(workspace.root) };
}

export async function mcpList(args: string[]): Promise<number> {
  const { parsed, config } = await configOf(args);
  if (parsed.positionals.length > 0)
    throw new UsageError(`unexpected arguments: ${parsed.positionals.join(" ")}`);
  const selection = mcpSelection(config);
  const row = (server: SelectedServer, starts: boolean): ServerRow => ({
    name: server.name,
    source: server.source,
    transport: isStdioDefinition(server.definition) ? "stdio" : "http",
    starts,
    approved: server.source === "user" ? null : starts,
    required: server.definition.required,
    trusted: server.definition.trusted,
    digest: server.digest,
  });
  const rows = [
    ...selection.start.map((s) => row(s, true)),
    ...selection.unapproved.map((s) => row(s, false)),
  ];
  const shadowed = selection.shadowed.map((name) => ({ name, source: "project", shadowed: true }));
  if (parsed.values.json) {
    process.stdout.write(`${JSON.stringify({ servers: rows, shadowed })}\n`);
    return 0;
  }
  if (rows.length === 0 && shadowed.length === 0) {
    process.stdout.write('no MCP servers configured (add them under "mcp_servers" in your user config)\n');
    return 0;
  }
  for (const r of rows) {
    const status =
      r.source === "user" ? "starts" : r.approved ? "approved, starts" : "NOT approved, does not start";
    const flags = [r.transport, r.required ? "required" : "optional", r.trusted ? "trusted" : "untrusted"];
    process.stdout.write(
      `${escapeForTerminal(r.name).padEnd(20)} ${r.source.padEnd(8)} ${status} (${flags.join(", ")})\n`,
    );
  }
  for (const s of shadowed)
    process.stdout.write(
      `${escapeForTerminal(s.name).padEnd(20)} project  ignored: your user config defines it\n`,
    );
  if (selection.unapproved.length > 0) {
    const root = shellQuote(config.project ? dirname(config.project.path) : ".");
    process.stdout.write(
      `approve a proposal after reviewing it: harness mcp approve NAME --workspace ${root}\n`,
    );
  }
  return 0;
}

export async function mcpTest(args: string[]): Promise<number> {
  const { parsed, root, config } = await configOf(args);
  const [name, ...extra] = parsed.positionals;
  if (name === undefined) throw new UsageError("which server? harness mcp test NAME (see: harness mcp list)");
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  const selection = mcpSelection(config);
  const server = selection.start.find((s) => s.name === name);
  if (server === undefined) {
    const proposal = selection.unapproved.find((s) => s.name === name);
    throw new UsageError(
      proposal
        ? `the project proposes "${name}" but you have not approved it; review and approve it first: harness mcp approve ${name} --workspace ${shellQuote(root)}`
        : `no MCP server "${name}" is configured (see: harness mcp list)`,
    );
  }
  const { executor, processes } = await loadGovernance(root, {}, process.env);
  // Required for the trial: a server that cannot start is this command's failure (exit 2).
  const trial: SelectedServer = { ...server, definition: { ...server.definition, required: true } };
  const { servers } = await McpServers.start(
    [trial],
    {
      executor,
      workspace: root,
      view: processes.view,
      ...(processes.bwrapPath ? { bwrapPath: processes.bwrapPath } : {}),
      ...(processes.override ? { override: processes.override } : {}),
    },
    (progress) => {
      if (!parsed.values.json) process.stderr.write(`${progressLine(progress)}\n`);
    },
  );
  try {
    const { entries, unavailable } = servers.tools();
    const tools = entries.map((entry) => ({
      name: entry.tool.name,
      raw_name: entry.rawName,
      effect: entry.tool.effect,
      idempotency: entry.tool.idempotency,
    }));
    if (parsed.values.json) {
      process.stdout.write(`${JSON.stringify({ server: name, tools, unavailable })}\n`);
      return 0;
    }
    process.stdout.write(`${escapeForTerminal(name)}: ${tools.length} tools\n`);
    for (const tool of tools) {
      const raw =
        tool.raw_name === tool.name.split("__").slice(2).join("__")
          ? ""
          : ` (server name "${escapeForTerminal(tool.raw_name)}")`;
      process.stdout.write(`  ${escapeForTerminal(tool.name).padEnd(40)} ${tool.effect}${raw}\n`);
    }
    for (const tool of unavailable)
      process.stdout.write(
        `  not offered: "${escapeForTerminal(tool.tool)}": ${escapeForTerminal(tool.reason)}\n`,
      );
    return 0;
  } finally {
    await servers.close();
  }
}

export async function mcpApprove(args: string[]): Promise<number> {
  const { parsed, root, config } = await configOf(args);
  const [name, ...extra] = parsed.positionals;
  if (name === undefined) throw new UsageError("which server? harness mcp approve NAME --workspace DIR");
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  const selection = mcpSelection(config);
  const proposal = [...selection.unapproved, ...selection.start].find(
    (s) => s.name === name && s.source === "project",
  );
  if (proposal === undefined) {
    throw new UsageError(
      selection.shadowed.includes(name)
        ? `your user config defines "${name}" itself; the project's proposal of that name is never used`
        : `the project at ${root} proposes no MCP server "${name}" (see: harness mcp list --workspace ${shellQuote(root)})`,
    );
  }
  const shown = escapeLines(JSON.stringify(proposal.definition, null, 2));
  process.stdout.write(
    `MCP server "${escapeForTerminal(name)}" as the project proposes it:\n${shown.map((l) => `  ${l}`).join("\n")}\n`,
  );
  if (userApprovals(config)[name] === proposal.digest) {
    process.stdout.write("already approved (this exact definition); nothing changed\n");
    return 0;
  }
  const file = userConfigPath(process.env, homedir());
  await recordApproval(file, name, proposal.digest);
  process.stdout.write(
    `approved: recorded in ${escapeForTerminal(file)} (mcp_approvals.${escapeForTerminal(name)} = ${proposal.digest})\n`,
  );
  return 0;
}

/** Add `mcp_approvals.NAME = digest` to the user config, keeping every other key. */
async function recordApproval(file: string, name: string, digest: string): Promise<void> {
  await updateUserConfig(file, (config) => {
    const approvals = config.mcp_approvals ?? {};
    if (typeof approvals !== "object" || approvals === null || Array.isArray(approvals))
      throw new UsageError(`${file}: mcp_approvals must be an object; fix it first`);
    config.mcp_approvals = { ...(approvals as Record<string, unknown>), [name]: digest };
  });
}
