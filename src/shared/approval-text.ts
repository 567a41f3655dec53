import { escapeForTerminal } from "./terminal-text.js";

/**
 * What an approval question shows of a long command. A terminal shows a long line wrapped and
 * keeps only the last screenful in view, so a model can push the part that matters out of sight:
 * `curl … | sh;` followed by a hundred thousand spaces (or a long quoted comment) and then `ls`
 * leaves a screen of blanks and an innocent `ls` above "Allow?". Both approvers (the terminal's and
 * the chat's) therefore show runs of spaces as a count, and warn right above the question when
 * the command is longer than one screen can hold.
 */

/** Runs of at least this many spaces are shown as `[N spaces]`. */
const SPACE_RUN = 8;
/** A command longer than this (after escaping) may not fit on one screen. */
export const LONG_COMMAND_CHARS = 1000;

/** Runs within a line; indentation at the start of a line (laid-out JSON) is left alone. */
const SPACE_RUNS = new RegExp(`(?<=[^\n]) {${SPACE_RUN},}`, "g");

/** Escaped text with each run of SPACE_RUN or more spaces within a line replaced by a visible count. */
export function collapseSpaceRuns(escaped: string): string {
  return escaped.replace(SPACE_RUNS, (run) => ` [${run.length} spaces] `);
}

/** The warning for a command too long to read at a glance, or undefined for a short one. */
export function longCommandNote(shown: string): string | undefined {
  if (shown.length <= LONG_COMMAND_CHARS) return undefined;
  return (
    `the command is ${shown.length} characters long, more than one screen: ` +
    "scroll up and read all of it before answering, or deny"
  );
}

/** A grant's subject longer than this is not repeated in the question, which must stay one line. */
const QUESTION_SUBJECT_CHARS = 120;

/**
 * What the question names as the session grant: the escaped label, or for a long one (the
 * command itself, shown in full above) a reference to it, so the line right above the answer is
 * never pushed out of view by the question itself.
 */
export function grantForQuestion(tool: string, escapedLabel: string): string {
  const shown = collapseSpaceRuns(escapedLabel);
  if (shown.length <= QUESTION_SUBJECT_CHARS) return shown;
  return `${tool}(the ${shown.length}-character subject shown above)`;
}

/** What an approval's session choices grant, in the rule syntax, escaped and ready to show. */
export interface ApprovalChoices {
  /** `s`: exactly this call (`shell(npm test --watch)`), shortened when long. */
  exact: string;
  /** `p`: the offered prefix (`shell(npm test*)`), when the request offers one. */
  prefix?: string;
}

/** The session choices of a request (its tool, subject and offered pattern). */
export function approvalChoices(request: {
  tool: string;
  subject: { kind: string; value: string };
  pattern?: string;
}): ApprovalChoices {
  const tool = escapeForTerminal(request.tool);
  const exact =
    request.subject.kind === "none"
      ? `${tool} with exactly these arguments`
      : `${tool}(${escapeForTerminal(request.subject.value)})`;
  return {
    exact: grantForQuestion(tool, exact),
    ...(request.pattern !== undefined
      ? { prefix: collapseSpaceRuns(`${tool}(${escapeForTerminal(request.pattern)})`) }
      : {}),
  };
}
