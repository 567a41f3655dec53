import type { EngineRun } from "./outcome.js";

/** Effects that change nothing: a denied call of these is not a change the run was refused. */
const CHANGES_NOTHING = new Set(["pure", "read_only", "network_read"]);

/**
 * The model tried to change something (write a file, run a command, any tool whose effect is not
 * read-only) and every such call was denied. Without acceptance checks such a run would end
 * `unverified` with exit 0 although it could not do what it was asked; it stops instead, naming
 * the tools. Undefined when nothing was attempted or at least one change went through.
 */
export function everyChangeDenied(run: EngineRun): { calls: number; tools: string[] } | undefined {
  let calls = 0;
  const tools = new Set<string>();
  for (const result of run.state.results.values()) {
    const effect = run.tools().get(result.name)?.tool.effect;
    if (effect === undefined || CHANGES_NOTHING.has(effect)) continue;
    if (result.status !== "denied") return undefined;
    calls += 1;
    tools.add(result.name);
  }
  return calls > 0 ? { calls, tools: [...tools].sort() } : undefined;
}

/** The reason and message a run stopped for by `everyChangeDenied` records. */
export function changesDeniedStop(denied: { calls: number; tools: string[] }): [string, string] {
  return [
    "changes_denied",
    `every change the model tried was denied (${denied.calls} call(s) of ${denied.tools.join(", ")}); ` +
      "nothing was changed: allow them (--write allow, --shell allow or --allow RULE) and run again",
  ];
}
