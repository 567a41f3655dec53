import { SESSION_ID_PATTERN } from "../journal/session-path.js";
import { UsageError } from "./usage-error.js";

/** A session id a caller gave: letters, digits, '.', '_' or '-', at most 64 (it names a folder). */
export function validateSessionId(id: string): void {
  if (!SESSION_ID_PATTERN.test(id)) {
    throw new UsageError(`invalid session id "${id}": use letters, digits, '.', '_' or '-' (at most 64)`);
  }
}
