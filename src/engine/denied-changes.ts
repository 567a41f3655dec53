import type { EngineRun } from "./outcome.js";

/** Effects that change nothing: a denied call of these is not a change the run was refused. */
const CHANGES_NOTHING = new Set(["pure", "read_only", "network_read"]);

/**
 * What a turn whose every change was denied was refused: the calls, the tools, and the CLI flags
 * that would allow them, each a flag with its value (`["--write", "allow"]`).
 */
export interface DeniedChanges {
  calls: number;
  tools: string[];
  allow: string[][];
}

/**
 * The model tried to change something in the latest turn (write a file, run a command, any tool
 * whose effect is not read-only) and every such call of that turn was denied. Without acceptance
 * checks such a turn would end `unverified` with exit 0 although it could not do what it was
 * asked; it stops instead, naming the tools. Earlier turns do not count: what they changed, or
 * were refused, is not what this turn was asked. Undefined when the turn attempted no change or
 * at least one went through.
 */
export function everyChangeDenied(run: EngineRun): DeniedChanges | undefined {
  return collectDenied(run, true);
}

/**
 * The changes of the latest turn that were denied, whether or not others went through: when the
 * acceptance checks then fail, the flags that would have allowed them are worth naming (the
 * model may have failed for want of them). Undefined when none was denied.
 */
export function someChangesDenied(run: EngineRun): DeniedChanges | undefined {
  return collectDenied(run, false);
}

function collectDenied(run: EngineRun, every: boolean): DeniedChanges | undefined {
  let calls = 0;
  const tools = new Set<string>();
  const allow = new Map<string, string[]>();
  // The turn's results of the model's own calls, counted by tool (a program's refused call, a
  // write inside `batch`, is no change a flag would have allowed, and is not counted).
  for (const [name, { denied, other }] of run.state.turnOutcomes) {
    const effect = run.tools().get(name)?.tool.effect;
    if (effect === undefined || CHANGES_NOTHING.has(effect)) continue;
    if (other > 0 && every) return undefined;
    if (denied === 0) continue;
    calls += denied;
    tools.add(name);
    const flag = allowingFlag(effect, name);
    allow.set(flag.join(" "), flag);
  }
  if (calls === 0) return undefined;
  const flags = [...allow.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, flag]) => flag);
  return { calls, tools: [...tools].sort(), allow: flags };
}

/** The permission flag that allows a call of this effect (the defaults deny writes and commands off a terminal). */
function allowingFlag(effect: string, tool: string): string[] {
  if (effect === "local_write") return ["--write", "allow"];
  if (effect === "process_execution") return ["--shell", "allow"];
  return ["--allow", tool];
}

/** The reason and message a turn stopped for by `everyChangeDenied` records (the flags go in `allow`). */
export function changesDeniedStop(denied: DeniedChanges): [string, string] {
  return [
    "changes_denied",
    `every change the model tried was denied (${denied.calls} call(s) of ${denied.tools.join(", ")}); ` +
      `nothing was changed: allow them (${denied.allow.map((flag) => flag.join(" ")).join(" ")}) and run again`,
  ];
}

/** The message of an `acceptance_failed` stop after some changes were denied (the flags go in `allow`). */
export function acceptanceFailedAfterDenials(denied: DeniedChanges): string {
  return (
    `the model finished but the acceptance checks failed; ${denied.calls} change(s) it tried were denied ` +
    `(${denied.tools.join(", ")}): to allow them, run again with ${denied.allow.map((flag) => flag.join(" ")).join(" ")}`
  );
}
