import { realpathSync } from "node:fs";
import { homedir } from "node:os";
import { userConfigPath } from "../../config/load.js";
import type { CommandEntry, Extensions, PluginEntry, SkillEntry } from "../../session/extensions/discover.js";
import { usable } from "../../session/extensions/discover.js";
import { sessionExtensions } from "../../session/extensions/session.js";
import { type ExtensionApproval, withExtensionApproval } from "../../session/extensions/trust.js";
import { loadConfigForCli } from "../../session/governance.js";
import { UsageError } from "../../session/usage-error.js";
import { openWorkspace } from "../../session/workspace.js";
import { escapeForTerminal, jsonForTerminal } from "../../shared/terminal-text.js";
import { parse } from "../args.js";
import { EXIT } from "../exit-codes.js";
import { stderrNotices } from "../notices.js";
import { updateUserConfig } from "../user-config-file.js";

const HELP = `Usage: harness plugins list [--workspace DIR] [--json]
       harness plugins approve NAME [--workspace DIR]

Skills (NAME/SKILL.md folders), command templates (NAME.md) and plugins (a folder with
plugin.json bundling skills and commands) from your folder (~/.config/harness/skills,
commands, plugins: the directory of your user config) and the project's (.agents/skills,
.agents/commands, .agents/plugins; the .claude folders other agents use are read too).

Yours are trusted. A project's are not loaded until you approve them: approve NAME records,
in your user config (plugin_approvals), this workspace's real path and the SHA-256 digest of
exactly what you reviewed (a skill's or plugin's whole folder, a command's file). A later
change to any file changes the digest and asks again. Nothing a skill or plugin says can widen
your policy: a skill's allowed-tools only narrow what the session may do while it is active.

  list       each skill, command and plugin with its source and whether it is loaded
  approve    approve every item list names NAME in this workspace (after reviewing it)

Options:
  --workspace, -w DIR   the workspace (default: the current directory)
  --json                list as JSON

Exit codes: 0 done, 64 usage error (no such item, or it cannot be used).`;

const OPTIONS = {
  workspace: { type: "string", short: "w" },
  json: { type: "boolean" },
} as const;

type Item = SkillEntry | CommandEntry | PluginEntry;

export const pluginsCommand = {
  help: HELP,
  async run(args: string[]): Promise<number> {
    const [sub, ...rest] = args;
    if (sub === "list") return list(rest);
    if (sub === "approve") return approve(rest);
    throw new UsageError(
      sub === undefined ? "which subcommand? list or approve" : `unknown subcommand "${sub}"`,
    );
  },
};

async function find(args: string[]): Promise<{
  parsed: ReturnType<typeof parse<typeof OPTIONS>>;
  root: string;
  extensions: Extensions;
}> {
  const parsed = parse(args, OPTIONS);
  const workspace = await openWorkspace(parsed.values.workspace, { notify: stderrNotices });
  const config = await loadConfigForCli(workspace.root);
  const extensions = sessionExtensions({ config, workspaceRoot: workspace.root, env: process.env });
  return { parsed, root: workspace.root, extensions };
}

function itemsOf(extensions: Extensions): Item[] {
  return [...extensions.skills, ...extensions.commands, ...extensions.plugins];
}

function state(item: Item): string {
  if (item.problem !== undefined) return `NOT loaded: ${item.problem}`;
  switch (item.trust.state) {
    case "user":
      return "yours, loaded";
    case "approved":
      return "approved at this digest, loaded";
    case "none":
      return "NOT approved, not loaded";
    case "changed":
      return "CHANGED since approved, not loaded";
  }
}

async function list(args: string[]): Promise<number> {
  const { parsed, extensions } = await find(args);
  if (parsed.positionals.length > 0)
    throw new UsageError(`unexpected arguments: ${parsed.positionals.join(" ")}`);
  const items = itemsOf(extensions);
  if (parsed.values.json) {
    const rows = items.map((item) => ({
      kind: item.kind,
      name: item.name,
      source: item.source,
      path: item.shown,
      digest: item.digest,
      approved: item.trust.state === "user" ? null : item.trust.state === "approved",
      state: item.trust.state,
      loaded: usable(item),
      ...(item.problem !== undefined ? { problem: item.problem } : {}),
      ...(item.kind === "skill" && item.allowedTools ? { allowed_tools: item.allowedTools } : {}),
      ...(item.kind === "plugin" && item.declared.length > 0 ? { parts: item.declared } : {}),
    }));
    process.stdout.write(`${jsonForTerminal(rows)}\n`);
    return EXIT.ok;
  }
  if (items.length === 0) {
    process.stdout.write("no skills, commands or plugins found\n");
    return EXIT.ok;
  }
  for (const item of items) {
    process.stdout.write(
      `${item.kind.padEnd(8)} ${escapeForTerminal(item.name).padEnd(24)} ${escapeForTerminal(item.source).padEnd(16)} ` +
        `${escapeForTerminal(item.shown)}  sha256 ${item.digest.slice(0, 12)}  ${escapeForTerminal(state(item))}\n`,
    );
  }
  return EXIT.ok;
}

async function approve(args: string[]): Promise<number> {
  const { parsed, root, extensions } = await find(args);
  const [name, ...extra] = parsed.positionals;
  if (name === undefined)
    throw new UsageError("which one? harness plugins approve NAME (see: harness plugins list)");
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(" ")}`);
  // Only a project's own items are approved here; a plugin's parts go with their plugin.
  const items = itemsOf(extensions).filter(
    (item) => item.name === name && item.scope === "project" && !item.source.startsWith("plugin "),
  );
  if (items.length === 0) {
    const yours = itemsOf(extensions).some((item) => item.name === name);
    throw new UsageError(
      yours
        ? `"${name}" is yours or part of a plugin: there is nothing to approve (approve the plugin instead)`
        : `the project at ${root} ships no skill, command or plugin "${name}" (see: harness plugins list)`,
    );
  }
  const broken = items.find((item) => item.problem !== undefined);
  if (broken) throw new UsageError(`cannot approve ${broken.kind} "${name}": ${broken.problem}`);
  // The same real path sessions judge approvals against.
  const workspace = realpathSync(root);
  const fresh = items.filter((item) => item.trust.state !== "approved");
  for (const item of items) {
    process.stdout.write(
      `${item.kind} "${escapeForTerminal(item.name)}" at ${escapeForTerminal(item.shown)}, sha256 ${item.digest}` +
        `${item.kind === "skill" && item.allowedTools ? ` (allowed-tools, which only narrow: ${escapeForTerminal(item.allowedTools.join(" "))})` : ""}\n`,
    );
  }
  if (fresh.length === 0) {
    process.stdout.write("already approved at these digests; nothing changed\n");
    return EXIT.ok;
  }
  const file = userConfigPath(process.env, homedir());
  await updateUserConfig(file, (config) => {
    const approvals = config.plugin_approvals ?? {};
    if (typeof approvals !== "object" || approvals === null || Array.isArray(approvals))
      throw new UsageError(`${file}: plugin_approvals must be an object; fix it first`);
    let recorded = (approvals as Record<string, unknown>)[name];
    for (const item of fresh) {
      const approval: ExtensionApproval = { workspace, kind: item.kind, digest: item.digest };
      recorded = withExtensionApproval(
        Array.isArray(recorded) ? (recorded as ExtensionApproval[]) : undefined,
        approval,
      );
    }
    config.plugin_approvals = { ...(approvals as Record<string, unknown>), [name]: recorded };
  });
  process.stdout.write(
    `approved for this workspace only, at these digests: recorded in ${escapeForTerminal(file)} (plugin_approvals.${escapeForTerminal(name)})\n`,
  );
  return EXIT.ok;
}
