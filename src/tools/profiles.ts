import type { AnyTool } from "./tool.js";

/** Named tool sets. Order is the order the model sees, and it never changes within a session. */
export const TOOL_PROFILES = {
  // `batch` comes with the read tools: its programs call only those.
  // `web_fetch` changes nothing here: it is offered with the read tools, and works only where the
  // session has network (`--network policy`, which a read-only run gets only from its command line).
  readonly: ["read_file", "glob", "grep", "read_artifact", "batch", "web_fetch"],
  // The process tools come with the shell: they work with the processes it starts in the background.
  coding: [
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "grep",
    "read_artifact",
    "batch",
    "shell",
    "web_fetch",
    "process_output",
    "process_input",
    "process_stop",
    "process_list",
  ],
  "shell-only": ["shell", "process_output", "process_input", "process_stop", "process_list"],
  files: [
    "shell",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "batch",
    "process_output",
    "process_input",
    "process_stop",
    "process_list",
  ],
} as const satisfies Record<string, readonly string[]>;

export type ToolProfile = keyof typeof TOOL_PROFILES;

/** The tools that work with the shell's background processes: nothing to do without the shell. */
export const PROCESS_TOOLS: readonly string[] = [
  "process_output",
  "process_input",
  "process_stop",
  "process_list",
];

/** A tool list without the process tools when it has no shell (a deny rule or a list removed it). */
export function withoutOrphanProcessTools<T extends string | { name: string }>(list: readonly T[]): T[] {
  const name = (item: T) => (typeof item === "string" ? item : item.name);
  if (list.some((item) => name(item) === "shell")) return [...list];
  return list.filter((item) => !PROCESS_TOOLS.includes(name(item)));
}

/** Whether `--tools` names a profile rather than listing tools. */
export function isToolProfile(selection: string): selection is ToolProfile {
  return Object.hasOwn(TOOL_PROFILES, selection);
}

export class ToolSelectionError extends Error {
  override readonly name = "ToolSelectionError";
}

/**
 * Resolve `--tools` (a profile name or a comma-separated list of tool names) against the
 * available tools, in the profile's (or the list's) order.
 */
export function selectTools(selection: string, available: readonly AnyTool[]): AnyTool[] {
  const byName = new Map(available.map((tool) => [tool.name, tool]));
  const names: readonly string[] = Object.hasOwn(TOOL_PROFILES, selection)
    ? TOOL_PROFILES[selection as ToolProfile]
    : selection
        .split(",")
        .map((name) => name.trim())
        .filter((name) => name.length > 0);
  if (names.length === 0) throw new ToolSelectionError("no tools selected");
  const unknown = names.filter((name) => !byName.has(name));
  if (unknown.length > 0) {
    throw new ToolSelectionError(
      `unknown tool(s) ${unknown.join(", ")}; profiles: ${Object.keys(TOOL_PROFILES).join(", ")}; tools: ${[...byName.keys()].join(", ")}`,
    );
  }
  if (new Set(names).size !== names.length) throw new ToolSelectionError("a tool is listed twice");
  return names.map((name) => byName.get(name)!);
}
