import type { RunSummary } from "../engine/options.js";
import { hint, shellQuote } from "./hints.js";

/** The CLI's defaults (run.ts's help states them): a resume gets this much more than was spent. */
const MORE_REQUESTS = 50;
const MORE_CALLS = 200;

/**
 * What the user can type next after a run ended the way `summary` says, each a command that
 * works as printed from the current directory (hints.ts). `transportFailed`: a model request
 * could not reach the server during the run (it may have stopped for another reason, e.g. the
 * retries used up the request budget). `goal`: the task a new run would be given again, when known.
 */
export function nextSteps(
  summary: RunSummary,
  workspace: { root: string },
  transportFailed: boolean,
  given: {
    /** Every flag of the run, for a new one (each a flag with its value). */
    rerun?: readonly (readonly string[])[];
    /**
     * What any command that continues this session must be given again because the journal does
     * not record it (see `resumeCommand`).
     */
    unrecorded?: readonly (readonly string[])[];
    goal?: string;
  } = {},
): string[] {
  const id = summary.session;
  const at = (command: string) => hint(command, workspace);
  const resume = (replace: readonly (readonly string[])[] = []) =>
    resumeCommand(id, workspace, given.unrecorded, replace);
  switch (summary.status) {
    case "verified":
    case "unverified":
      return [];
    case "cancelled":
      return [resume()];
    case "needs_review":
      return [at(`diff ${id}`), at(`apply ${id}`)];
    case "review_required":
      return [at(`review ${id}`), at(`inspect ${id}`)];
    case "interrupted":
      return [continueCommand(id, workspace, given.unrecorded)];
    case "stopped":
      break;
  }
  switch (summary.reason) {
    case "budget_exhausted": {
      // The budgets count the whole session, so a resume needs a larger one to do anything.
      const calls = summary.message?.includes("tool-call") === true;
      return [
        resume([
          calls
            ? ["--max-tool-calls", String(summary.tool_calls + MORE_CALLS)]
            : ["--max-model-requests", String(summary.model_requests + MORE_REQUESTS)],
        ]),
      ];
    }
    case "provider_error":
      return [resume()];
    case "context_exhausted":
      return [at(`compact ${id}`), resume()];
    case "acceptance_failed":
    case "changes_denied": {
      // A session keeps the policy it was recorded with, so allowing the changes takes a new run:
      // every flag of this one, with the ones that allow what was denied. A journal written before
      // the flags were recorded with the stop has only the inspect hint.
      if (summary.allow === undefined)
        return summary.reason === "acceptance_failed" && transportFailed ? [resume()] : [at(`inspect ${id}`)];
      const words = flagsText(allowing(given.rerun ?? [], summary.allow));
      return [at(`run${words} ${goalWord(given.goal)}`), at(`inspect ${id}`)];
    }
    default:
      return transportFailed ? [resume()] : [at(`inspect ${id}`)];
  }
}

/*
 * The commands that go on with a recorded session, built here and nowhere else, so every hint
 * (after a stop, an interrupt, a compaction; in the summary and on Ctrl-C) repeats the same
 * things: the session by id (`--continue` would take whichever session of the workspace is the
 * latest when it is pasted), and `unrecorded`, what the journal does not keep but the session
 * needs to go on the same way (run.ts `unrecordedFlags`: the scripted model, the budgets, the pool
 * size, the acceptance timeout and commands). The policy, the model and the context window come
 * from the journal. Each works as printed from any directory (hints.ts).
 */

/**
 * `harness resume`: continue the stopped or cancelled session. `replace`: flags this command
 * sets itself (a larger budget), which take the place of the session's own value of them.
 */
export function resumeCommand(
  id: string,
  workspace: { root: string },
  unrecorded: readonly (readonly string[])[] = [],
  replace: readonly (readonly string[])[] = [],
): string {
  const replaced = new Set(replace.map((flag) => flag[0]));
  const kept = unrecorded.filter((flag) => !replaced.has(flag[0]));
  return hint(`resume ${id}${flagsText([...kept, ...replace])}`, workspace);
}

/**
 * For a resume printed where the run's own flags are not at hand (after `harness review`,
 * `harness journal adopt`): what the session cannot go on without, as placeholders to fill in
 * (a scripted model's file is in no journal).
 */
export function unrecordedPlaceholders(provider: { kind?: unknown } | undefined): string[][] {
  return provider?.kind === "scripted" ? [["--script", "FILE"]] : [];
}

/** `harness run --session`: the session's next turn, PROMPT standing for the person's next message. */
export function continueCommand(
  id: string,
  workspace: { root: string },
  unrecorded: readonly (readonly string[])[] = [],
): string {
  return hint(`run --session ${id}${flagsText(unrecorded)} PROMPT`, workspace);
}

/** `harness chat --session`: the chat that goes on with the session (printed when a chat is left). */
export function chatContinueCommand(
  id: string,
  workspace: { root: string },
  unrecorded: readonly (readonly string[])[] = [],
): string {
  return hint(`chat --session ${id}${flagsText(unrecorded)}`, workspace);
}

/** Flags as words to paste, each quoted when it needs to be, each after a space. */
function flagsText(flags: readonly (readonly string[])[]): string {
  return flags
    .flat()
    .map((word) => ` ${shellQuote(word)}`)
    .join("");
}

/**
 * The run's flags with `allow` taking effect: a flag it sets replaces the run's own value of it,
 * and --read-only (which denies every write) goes when writes are allowed.
 */
function allowing(flags: readonly (readonly string[])[], allow: readonly string[][]): string[][] {
  const replaced = new Set(allow.filter((flag) => flag[0] !== "--allow").map((flag) => flag[0]));
  if (replaced.has("--write")) replaced.add("--read-only");
  const kept = flags.filter((flag) => !replaced.has(flag[0] ?? ""));
  const present = new Set(kept.map((flag) => flag.join(" ")));
  return [...kept.map((flag) => [...flag]), ...allow.filter((flag) => !present.has(flag.join(" ")))];
}

/** The goal as one pasteable word; a long or multi-line one (typed once, or piped in) stays a placeholder. */
function goalWord(goal: string | undefined): string {
  return goal === undefined || goal === "" || goal.length > 120 || goal.includes("\n")
    ? "GOAL"
    : shellQuote(goal);
}

/**
 * Messages from below the CLI (the engine, the journal) name commands without the workspace:
 * `harness diff ID`. Each such command gets `--workspace DIR` when it needs it, so it works as
 * printed too.
 */
export function withWorkspace(text: string, workspace: { root: string } | undefined): string {
  if (workspace === undefined) return text;
  return text.replace(
    /harness (resume|inspect|diff|apply|review|unlock|compact|journal repair|journal adopt|journal verify) ([A-Za-z0-9._-]+)((?: --?[a-z][a-z-]*)*)/g,
    (match, command: string, id: string, flags: string) =>
      // A placeholder (SESSION) is a usage line, not a command to paste.
      flags.includes("--workspace") || /^[A-Z_]+$/.test(id)
        ? match
        : hint(`${command} ${id}${flags}`, workspace),
  );
}
