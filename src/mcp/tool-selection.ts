import { TOOL_PROFILES } from "../tools/profiles.js";
import type { EffectClass } from "../tools/tool.js";

/**
 * What `--tools SET` means for MCP tools. The profiles name built-in tools; MCP tools are only
 * known once the servers listed them, so they are selected by a rule:
 *
 * - `coding` (the default): every tool the servers offer (after enabled_tools/disabled_tools).
 * - `readonly`: only tools whose effect class is read-only. Effect classes come from a server's
 *   annotations only when the user marked it trusted, so an untrusted server offers none.
 * - `shell-only`, `files`: none (they are built-in tool sets).
 * - a list `a,b,...`: the MCP names in it (`mcp__SERVER__TOOL`, `*` matching any characters, e.g.
 *   `mcp__github__*`); the other names are built-in tools. A name that no server lists is not an
 *   error: a server may add it later.
 */

export interface ToolSelection {
  /** The built-in part of the selection for selectTools; undefined when it names none. */
  builtins: string | undefined;
  /** Whether an MCP tool (by its harness name and effect class) is offered. */
  mcp(tool: { name: string; effect: EffectClass }): boolean;
}

const READ_ONLY: ReadonlySet<EffectClass> = new Set(["read_only", "network_read"]);

export function parseToolSelection(selection: string): ToolSelection {
  if (Object.hasOwn(TOOL_PROFILES, selection)) {
    return {
      builtins: selection,
      mcp:
        selection === "coding"
          ? () => true
          : selection === "readonly"
            ? (tool) => READ_ONLY.has(tool.effect)
            : () => false,
    };
  }
  const names = selection
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
  const patterns = names.filter((name) => name.startsWith("mcp__")).map(patternOf);
  const builtins = names.filter((name) => !name.startsWith("mcp__"));
  return {
    // An empty selection stays as given, for selectTools to refuse it.
    builtins: builtins.length > 0 || patterns.length === 0 ? builtins.join(",") : undefined,
    mcp: (tool) => patterns.some((pattern) => pattern.test(tool.name)),
  };
}

function patternOf(name: string): RegExp {
  const source = name
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  return new RegExp(`^${source}$`);
}
