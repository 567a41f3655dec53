import { CodedError } from "../shared/coded-error.js";

export type EngineErrorCode = "IDENTITY_MISMATCH" | "SESSION_NOT_FOUND" | "INVARIANT" | "BAD_INPUT";

/** A failure of the engine itself (not of a tool): the run cannot continue. */
export class EngineError extends CodedError<EngineErrorCode> {
  override readonly name = "EngineError";
}
