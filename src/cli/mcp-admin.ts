import { homedir } from "node:os";
import { type LoadedConfig, userConfigPath } from "../config/load.js";
import {
  type ApprovalBinding,
  type ApprovalVerdict,
  type RecordedApproval,
  shownPath,
  withApproval,
} from "../mcp/approval.js";
import { isStdioDefinition } from "../mcp/config.js";
import type { SelectedServer } from "../mcp/selection.js";
import { McpRequiredServerError } from "../mcp/startup.js";
import { loadConfigForCli, loadGovernance } from "../session/governance.js";
import {
  approveCommand,
  McpServers,
  mcpSelection,
  progressLine,
  shellQuote,
} from "../session/mcp-servers.js";
import { UsageError } from "../session/usage-error.js";
import { openWorkspace } from "../session/workspace.js";
import { escapeForTerminal, escapeLines } from "../shared/terminal-text.js";
import { padEndWidth } from "../shared/text-width.js";
import { parse } from "./args.js";
import { stderrNotices } from "./notices.js";
import { updateUserConfig } from "./user-config-file.js";

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
  /**
   * A proposal: what an approval is bound to here (this workspace's real path, the definition's
   * digest, each named file's SHA-256) and whether the user's approvals cover it (`approved`), or
   * why not: `none`, `legacy` (an unbound approval from an earlier harness), `workspace` (given in
   * another workspace only), `changed` (the definition or a file changed since).
   */
  binding?: {
    state: "approved" | "none" | "legacy" | "workspace" | "changed";
    reason?: string;
    workspace: string;
    files: { path: string; sha256: string }[];
  };
  /** A project proposal the user's own definition of the same name overrides. */
  shadowed?: true;
}

async function configOf(args: string[]): Promise<{
  parsed: ReturnType<typeof parse<typeof OPTIONS>>;
  root: string;
  config: LoadedConfig;
}> {
  const parsed = parse(args, OPTIONS);
  const workspace = await openWorkspace(parsed.values.workspace, { notify: stderrNotices });
  return { parsed, root: workspace.root, config: await loadConfigForCli(workspace.root) };
}

function bindingRow(verdict: ApprovalVerdict): NonNullable<ServerRow["binding"]> {
  const { binding } = verdict;
  return {
    state: verdict.approved ? "approved" : verdict.kind,
    ...(verdict.approved ? {} : { reason: verdict.reason }),
    workspace: binding.workspace,
    files: Object.entries(binding.files).map(([path, sha256]) => ({
      path: shownPath(path, binding.workspace),
      sha256,
    })),
  };
}

export async function mcpList(args: string[]): Promise<number> {
  const { parsed, root, config } = await configOf(args);
  if (parsed.positionals.length > 0)
    throw new UsageError(`unexpected arguments: ${parsed.positionals.join(" ")}`);
  const selection = mcpSelection(config, root);
  const row = (server: SelectedServer, starts: boolean): ServerRow => ({
    name: server.name,
    source: server.source,
    transport: isStdioDefinition(server.definition) ? "stdio" : "http",
    starts,
    approved: server.source === "user" ? null : starts,
    required: server.definition.required,
    trusted: server.definition.trusted,
    digest: server.digest,
    ...(server.verdict ? { binding: bindingRow(server.verdict) } : {}),
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
      r.source === "user"
        ? "starts"
        : r.approved
          ? "approved for this workspace and these files, starts"
          : "NOT approved, does not start";
    const flags = [r.transport, r.required ? "required" : "optional", r.trusted ? "trusted" : "untrusted"];
    process.stdout.write(
      `${padEndWidth(escapeForTerminal(r.name), 20)} ${r.source.padEnd(8)} ${status} (${flags.join(", ")})\n`,
    );
    if (r.binding?.reason !== undefined)
      process.stdout.write(`${" ".repeat(21)}why: ${escapeForTerminal(r.binding.reason)}\n`);
    for (const file of r.binding?.files ?? [])
      process.stdout.write(
        `${" ".repeat(21)}runs ${escapeForTerminal(file.path)} (sha256 ${escapeForTerminal(file.sha256)})\n`,
      );
  }
  for (const s of shadowed)
    process.stdout.write(
      `${padEndWidth(escapeForTerminal(s.name), 20)} project  ignored: your user config defines it\n`,
    );
  if (selection.unapproved.length > 0) {
    process.stdout.write(
      `approve a proposal after reviewing it: harness mcp approve NAME --workspace ${shellQuote(root)}\n`,
    );
  }
  return 0;
}

export async function mcpTest(args: string[]): Promise<number> {
  const { parsed, root, config } = await configOf(args);
  const [name, ...extra] = parsed.positionals;
  if (name === undefined) throw new UsageError("which server? harness mcp test NAME (see: harness mcp list)");
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  const selection = mcpSelection(config, root);
  const server = selection.start.find((s) => s.name === name);
  if (server === undefined) {
    const proposal = selection.unapproved.find((s) => s.name === name);
    const why = proposal?.verdict?.approved === false ? proposal.verdict.reason : "you have not approved it";
    throw new UsageError(
      proposal
        ? `the project proposes "${name}" but it does not start: ${why}; review and approve it first: ${approveCommand(name, root)}`
        : `no MCP server "${name}" is configured (see: harness mcp list)`,
    );
  }
  const { executor, processes } = await loadGovernance(root, {}, process.env);
  // A server that cannot start is this command's failure (exit 2), said as a run would say it:
  // required (a run stops) or optional (a run goes on without it), as `mcp list` shows it.
  let failure: string | undefined;
  const started = McpServers.start(
    [server],
    {
      executor,
      workspace: root,
      view: processes.view,
      ...(processes.bwrapPath ? { bwrapPath: processes.bwrapPath } : {}),
      ...(processes.override ? { override: processes.override } : {}),
    },
    (progress) => {
      if (parsed.values.json) {
        if (progress.phase === "failed") failure = progress.error.message;
        return;
      }
      if (progress.phase !== "failed") {
        process.stderr.write(`${progressLine(progress)}\n`);
        return;
      }
      failure = progress.error.message;
      const [first = "", ...more] = escapeLines(failure);
      const role = progress.required
        ? "required: harness run stops when it cannot start"
        : "optional: harness run goes on without it";
      process.stderr.write(
        `${[`harness: MCP server ${escapeForTerminal(name)} (${role}) FAILED: ${first}`, ...more.map((line) => `  ${line}`)].join("\n")}\n`,
      );
    },
  );
  // A required server's failure is thrown (every server stopped), an optional one's reported.
  const servers = await started.then(
    (ok) => ok.servers,
    (error: unknown) => {
      if (error instanceof McpRequiredServerError && failure !== undefined) return undefined;
      throw error;
    },
  );
  if (servers === undefined || failure !== undefined) {
    await servers?.close();
    if (parsed.values.json)
      process.stdout.write(
        `${JSON.stringify({ server: name, started: false, required: server.definition.required, error: failure })}\n`,
      );
    return 2;
  }
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
      process.stdout.write(`  ${padEndWidth(escapeForTerminal(tool.name), 40)} ${tool.effect}${raw}\n`);
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
  const selection = mcpSelection(config, root);
  const proposal = [...selection.unapproved, ...selection.start].find(
    (s) => s.name === name && s.source === "project",
  );
  if (proposal?.verdict === undefined) {
    throw new UsageError(
      selection.shadowed.includes(name)
        ? `your user config defines "${name}" itself; the project's proposal of that name is never used`
        : `the project at ${root} proposes no MCP server "${name}" (see: harness mcp list --workspace ${shellQuote(root)})`,
    );
  }
  const { binding } = proposal.verdict;
  const shown = escapeLines(JSON.stringify(proposal.definition, null, 2));
  process.stdout.write(
    `MCP server "${escapeForTerminal(name)}" as the project at ${escapeForTerminal(root)} proposes it:\n${shown.map((l) => `  ${l}`).join("\n")}\n`,
  );
  const files = Object.entries(binding.files);
  process.stdout.write(
    files.length === 0
      ? "it names no file to run\n"
      : `the files it runs, as approved now (a later change to any of them needs a new approval):\n${files
          .map(
            ([file, sha256]) =>
              `  ${escapeForTerminal(shownPath(file, root))}  sha256 ${escapeForTerminal(sha256)}`,
          )
          .join("\n")}\n`,
  );
  const unreadable = files.filter(([, sha256]) => !/^[0-9a-f]{64}$/.test(sha256));
  if (unreadable.length > 0)
    throw new UsageError(
      `cannot approve "${name}": harness cannot read ${unreadable.map(([file]) => shownPath(file, root)).join(", ")}, so it cannot bind the approval to its content`,
    );
  if (proposal.verdict.approved) {
    process.stdout.write(
      "already approved (this workspace, this definition, these files); nothing changed\n",
    );
    return 0;
  }
  const file = userConfigPath(process.env, homedir());
  await recordApproval(file, name, binding);
  process.stdout.write(
    `approved for this workspace only: recorded in ${escapeForTerminal(file)} (mcp_approvals.${escapeForTerminal(name)}, definition ${binding.definition})\n`,
  );
  return 0;
}

/** Add the approval of `name` bound to `binding` to the user config, keeping every other key and other workspaces' approvals. */
async function recordApproval(file: string, name: string, binding: ApprovalBinding): Promise<void> {
  await updateUserConfig(file, (config) => {
    const approvals = config.mcp_approvals ?? {};
    if (typeof approvals !== "object" || approvals === null || Array.isArray(approvals))
      throw new UsageError(`${file}: mcp_approvals must be an object; fix it first`);
    const existing = (approvals as Record<string, unknown>)[name];
    const recorded: RecordedApproval = Array.isArray(existing) ? (existing as ApprovalBinding[]) : undefined;
    config.mcp_approvals = {
      ...(approvals as Record<string, unknown>),
      [name]: withApproval(recorded, binding),
    };
  });
}
