import type { Notify } from "../session/notice.js";
import { escapeForTerminal } from "../shared/terminal-text.js";
import { output } from "./output.js";

/**
 * The session layer's notices on stderr: warnings and notes always (escaped: they quote
 * workspace paths), progress unless -q.
 */
export const stderrNotices: Notify = (notice) => {
  if (notice.level === "progress" && output.quiet) return;
  const prefix = notice.level === "note" ? "harness: note: " : "harness: ";
  process.stderr.write(`${prefix}${escapeForTerminal(notice.message)}\n`);
};
