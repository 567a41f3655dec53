import type { EngineRun } from "./outcome.js";

/** Effects that change nothing: a denied call of these is not a change the run was refused. */
const CHANGES_NOTHING = new Set(["pure", "read_only", "network_read"]);

/** What a run whose every change was denied was refused: the calls, the tools, and the CLI flags that would allow them. */
export interface DeniedChanges {
  calls: number;
  tools: string[];
  allow: string[];
}

/**
 * The model tried to change something (write a file, run a command, any tool whose effect is not
 * read-only) and every such call was denied. Without acceptance checks such a run would end
 * `unverified` with exit 0 although it could not do what it was asked; it stops instead, naming
 * the tools. Undefined when nothing was attempted or at least one change went through.
 */
export function everyChangeDenied(run: EngineRun): DeniedChanges | undefined {
  let calls = 0;
  const tools = new Set<string>();
  const allow = new Set<string>();
  for (const result of run.state.results.values()) {
    const effect = run.tools().get(result.name)?.tool.effect;
    if (effect === undefined || CHANGES_NOTHING.has(effect)) continue;
    if (result.status !== "denied") return undefined;
    calls += 1;
    tools.add(result.name);
    allow.add(allowingFlag(effect, result.name));
  }
  return calls > 0 ? { calls, tools: [...tools].sort(), allow: [...allow].sort() } : undefined;
}

/** The permission flag that allows a call of this effect (the defaults deny writes and commands off a terminal). */
function allowingFlag(effect: string, tool: string): string {
  if (effect === "local_write") return "--write allow";
  if (effect === "process_execution") return "--shell allow";
  return `--allow ${tool}`;
}

const ALLOW_THEM = /allow them \(([^)]*)\) and run again$/;

/** The reason and message a run stopped for by `everyChangeDenied` records. */
export function changesDeniedStop(denied: DeniedChanges): [string, string] {
  return [
    "changes_denied",
    `every change the model tried was denied (${denied.calls} call(s) of ${denied.tools.join(", ")}); ` +
      `nothing was changed: allow them (${denied.allow.join(" ")}) and run again`,
  ];
}

/**
 * The flags a `changes_denied` stop's message names, as words for a command line: the message
 * is all a summary carries (also when read back from the journal), and it is written above.
 */
export function allowingFlagsIn(message: string | null): string[] {
  const flags = message === null ? undefined : ALLOW_THEM.exec(message)?.[1];
  return flags === undefined || flags === "" ? [] : flags.split(" ");
}
