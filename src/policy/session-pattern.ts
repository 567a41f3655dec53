/**
 * The prefix an approval "for the session" may grant instead of one exact command: the program
 * and, when its first argument names a subcommand, that too (`npm test*`, `git status*`,
 * `make*`). Written in the rule syntax the policy matches commands with (`*` any run of
 * characters), so the approval shows exactly the rule it adds: `shell(npm test*)`.
 */

/** A word that names a subcommand: `test`, `run`, `build:prod`; never an option, a path or an expansion. */
const SUBCOMMAND = /^[A-Za-z][A-Za-z0-9:_-]*$/;
/** A program name a pattern may start with: no wildcard, quote, expansion or control character. */
const PROGRAM = /^[A-Za-z0-9_./+-]+$/;

/**
 * The pattern for one simple command as the policy matches it (normalized, one space between
 * words), or undefined when none fits (a program name that is not plain text).
 */
export function sessionPatternOf(command: string): string | undefined {
  const [program, first] = command.split(" ");
  if (program === undefined || !PROGRAM.test(program)) return undefined;
  return first !== undefined && SUBCOMMAND.test(first) ? `${program} ${first}*` : `${program}*`;
}
