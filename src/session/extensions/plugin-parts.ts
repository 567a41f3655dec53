import type { ConfigSource } from "../../config/load.js";
import { type HookEntryConfig, hooksSchema } from "../../config/schema.js";
import type { ApprovalVerdict } from "../../mcp/approval.js";
import {
  definitionDigest,
  McpConfigError,
  type McpServerDefinition,
  parseMcpServers,
} from "../../mcp/config.js";
import type { ServerSelection } from "../../mcp/selection.js";
import { type Extensions, type PluginEntry, usable } from "./discover.js";
import { folderDigest } from "./folder-digest.js";

/**
 * A plugin's hooks and MCP servers, loaded only from a usable plugin (the user's, or a project's
 * approved at its current digest) and then exactly as a trusted project config's: its hooks are a
 * project source (they run in the hook sandbox, admit hooks can only refuse or narrow, never
 * allow), its servers are project proposals (sandboxed as their definition says, their approval
 * judged again before every start). Nothing here widens the user's policy: permissions are not
 * something a plugin can declare at all.
 */

/** One hook source per usable plugin with hooks: labelled `plugin NAME`, resolved against its folder. */
export function pluginHookSources(extensions: Pick<Extensions, "plugins">): {
  sources: ConfigSource[];
  notices: string[];
} {
  const sources: ConfigSource[] = [];
  const notices: string[] = [];
  for (const plugin of extensions.plugins) {
    if (!usable(plugin) || plugin.hooks === undefined) continue;
    const parsed = hooksSchema().safeParse(plugin.hooks);
    if (!parsed.success) {
      notices.push(`plugin "${plugin.name}": its hooks are not loaded: ${issues(parsed.error.issues)}`);
      continue;
    }
    // Only command hooks, which run in the hook sandbox: a module hook would be imported into
    // harness's own process, unsandboxed, so a plugin's is not loaded.
    const hooks: typeof parsed.data = {};
    let modules = 0;
    for (const [point, entries] of Object.entries(parsed.data) as [
      keyof typeof parsed.data,
      HookEntryConfig[],
    ][]) {
      const commands = (entries ?? []).filter((entry) => entry.command !== undefined);
      modules += (entries ?? []).length - commands.length;
      if (commands.length > 0) hooks[point] = commands;
    }
    if (modules > 0)
      notices.push(
        `plugin "${plugin.name}": ${modules} module hook(s) not loaded: a plugin's hooks must be commands (they run sandboxed)`,
      );
    sources.push({
      kind: "project",
      label: `plugin ${plugin.name}`,
      path: plugin.manifest,
      config: { hooks },
    });
  }
  return { sources, notices };
}

/**
 * `selection` with the MCP servers of usable plugins added as project proposals. A name the
 * selection already has (the user's own, the project config's) keeps that definition.
 */
export function withPluginServers(
  selection: ServerSelection,
  extensions: Pick<Extensions, "plugins">,
  workspace: string,
): { selection: ServerSelection; notices: string[] } {
  const taken = new Set([...selection.start, ...selection.unapproved].map((server) => server.name));
  const start = [...selection.start];
  const notices: string[] = [];
  for (const plugin of extensions.plugins) {
    if (!usable(plugin) || plugin.mcpServers === undefined) continue;
    let servers: Record<string, McpServerDefinition>;
    try {
      servers = parseMcpServers(plugin.mcpServers, `plugin ${plugin.name}`);
    } catch (error) {
      if (!(error instanceof McpConfigError)) throw error;
      notices.push(`plugin "${plugin.name}": its MCP servers are not loaded: ${error.message}`);
      continue;
    }
    for (const name of Object.keys(servers).sort()) {
      if (taken.has(name)) {
        notices.push(
          `plugin "${plugin.name}" also defines MCP server "${name}"; the one already defined is used`,
        );
        continue;
      }
      taken.add(name);
      const definition = servers[name]!;
      const judge = () => pluginVerdict(plugin, workspace);
      start.push({
        name,
        definition,
        source: "project",
        digest: definitionDigest(definition),
        approval: judge,
        verdict: judge(),
      });
    }
  }
  return { selection: { ...selection, start }, notices };
}

/**
 * The plugin's approval judged now: a user's plugin is the user's; a project's must still have
 * the digest it was approved at (a file changed since the session began is refused at start).
 */
function pluginVerdict(plugin: PluginEntry, workspace: string): ApprovalVerdict {
  const binding = { workspace, definition: plugin.digest, files: {} };
  if (plugin.trust.state === "user") return { approved: true, binding };
  let now: string;
  try {
    now = folderDigest(plugin.dir).digest;
  } catch {
    now = "";
  }
  if (now === plugin.digest) return { approved: true, binding };
  return {
    approved: false,
    binding,
    kind: "changed",
    reason: `plugin "${plugin.name}" changed since you approved it (its digest differs); review it, then: harness plugins approve ${plugin.name}`,
  };
}

function issues(list: readonly { path: PropertyKey[]; message: string }[]): string {
  return list.map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`).join("; ");
}
