import type { LoadedConfig } from "../config/load.js";
import type { DeferMode, DeferSettings } from "../engine/tool-offer.js";
import type { McpServerDefinition } from "../mcp/config.js";
import { MCP_NAME_PREFIX } from "../mcp/names.js";
import { toolMatches } from "../policy/rules.js";
import type { RunFlags } from "./run-flags.js";

/**
 * How a session defers its tools: `--defer-tools` beats the config's `tools.defer`, default `auto`.
 * Always loaded (never deferred): the built-in tools, tools named by `tools.always_load` (names
 * or `*` patterns such as `mcp__github__*`), and every tool of an MCP server whose entry says
 * `"always_load": true`. Deferring only changes what the model is shown up front: it decides no
 * call, so a project's setting counts like the user's (a trusted project's `defer` wins).
 */
export function deferSettings(
  flags: RunFlags,
  config: LoadedConfig,
  builtins: readonly string[],
  servers: readonly { name: string; definition: McpServerDefinition }[],
): DeferSettings {
  const sections = [config.user?.config.tools, config.project?.config.tools];
  const configured = (config.projectTrusted ? [...sections].reverse() : sections).find(
    (section) => section?.defer !== undefined,
  )?.defer;
  const mode: DeferMode = flags.deferTools ?? configured ?? "auto";
  const builtin = new Set(builtins);
  const patterns = sections.flatMap((section) => section?.always_load ?? []);
  const prefixes = servers
    .filter((server) => server.definition.always_load === true)
    .map((server) => `${MCP_NAME_PREFIX}${server.name}__`);
  return {
    mode,
    alwaysLoad: (name) =>
      builtin.has(name) ||
      patterns.some((pattern) => toolMatches(pattern, name)) ||
      prefixes.some((prefix) => name.startsWith(prefix)),
  };
}
