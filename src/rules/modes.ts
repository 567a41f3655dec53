/**
 * The mode names a user sets in config files and flags (`permissions.write`, `--shell`, ...).
 * What each mode decides is policy's business (src/policy/defaults.ts).
 */

/** How writes inside the workspace are treated when no rule matches. */
export type WriteMode = "allow" | "ask" | "deny" | "propose";
export const WRITE_MODES: readonly WriteMode[] = ["allow", "ask", "deny", "propose"];

/** How process execution is treated when no rule matches. */
export type ShellMode = "allow" | "ask" | "deny";
export const SHELL_MODES: readonly ShellMode[] = ["allow", "ask", "deny"];
