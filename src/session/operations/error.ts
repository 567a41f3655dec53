import { CodedError } from "../../shared/coded-error.js";

export type SessionOperationErrorCode =
  /**
   * The journal gained records between what a person was shown (and agreed to) and the moment
   * the operation took the writer lock: nothing was appended; look again and repeat it.
   */
  "JOURNAL_CHANGED";

/** An operation on a session refused on what its journal holds under the writer lock. */
export class SessionOperationError extends CodedError<SessionOperationErrorCode> {
  override readonly name = "SessionOperationError";
}
