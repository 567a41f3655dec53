export type EngineErrorCode = "IDENTITY_MISMATCH" | "SESSION_NOT_FOUND" | "INVARIANT" | "BAD_INPUT";

/** A failure of the engine itself (not of a tool): the run cannot continue. */
export class EngineError extends Error {
  readonly code: EngineErrorCode;
  constructor(code: EngineErrorCode, message: string) {
    super(message);
    this.name = "EngineError";
    this.code = code;
  }
}
