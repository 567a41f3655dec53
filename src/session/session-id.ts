import { AGENT_LABEL_RULE, isRootSessionId, isSessionId, MAX_AGENT_DEPTH } from "../journal/session-path.js";
import { UsageError } from "./usage-error.js";

/**
 * A session id a caller gave: letters, digits, '.', '_' or '-', at most 64 (it names a folder),
 * or a sub-agent's `PARENT/LABEL` (up to MAX_AGENT_DEPTH labels, each a folder inside the last).
 */
export function validateSessionId(id: string): void {
  if (!isSessionId(id)) {
    throw new UsageError(
      `invalid session id ${shown(id)}: use letters, digits, '.', '_' or '-' (at most 64)` +
        ` (a sub-agent's session: that id, then up to ${MAX_AGENT_DEPTH} "/LABEL"; ${AGENT_LABEL_RULE})`,
    );
  }
}

/**
 * The id of a new top-level session a person names (`fork --session`, `queue submit --session`):
 * a root id only. A sub-agent's session is started by its parent, never named from outside.
 */
export function validateRootSessionId(id: string): void {
  if (!isRootSessionId(id)) {
    throw new UsageError(
      `invalid session id ${shown(id)}: use letters, digits, '.', '_' or '-' (at most 64)`,
    );
  }
}

/** The id as JSON (control characters escaped), cut short: it is the caller's input. */
function shown(id: string): string {
  return JSON.stringify(String(id).slice(0, 80));
}
