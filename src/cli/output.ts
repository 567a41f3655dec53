/**
 * How harness prints, set once from the global options (`--quiet`) before a command runs. Only
 * what goes to the terminal depends on it; nothing recorded does.
 */
export const output = { quiet: false };
