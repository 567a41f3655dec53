import type { ToolStatus } from "../protocol/types.js";
import { CodedError } from "../shared/coded-error.js";

/**
 * The error taxonomy: one stable code per way a tool call can fail, with what it means for the
 * caller. `retryable`: the same call may be sent again unchanged. `requiresNewObservation`:
 * read again before retrying. `operationApplied`: whether the world may have changed.
 */
export interface ErrorCodeInfo {
  status: ToolStatus;
  retryable: boolean;
  requiresNewObservation: boolean;
  operationApplied: boolean | "unknown";
  hint: string;
}

export const ERROR_CODES = {
  UNKNOWN_TOOL: info("invalid", false, false, false, "Call one of the available tools listed."),
  INVALID_ARGUMENTS: info("invalid", false, false, false, "Fix the named fields to match the tool's schema."),
  SEMANTIC_VALIDATION_ERROR: info(
    "invalid",
    false,
    false,
    false,
    "The arguments are well-formed but inconsistent; fix them.",
  ),
  POLICY_DENIED: info(
    "denied",
    false,
    false,
    false,
    "Blocked by policy. Do not repeat the same call unchanged; choose another approach.",
  ),
  HOOK_DENIED: info(
    "denied",
    false,
    false,
    false,
    "A policy hook refused this call. Do not repeat it unchanged.",
  ),
  HOOK_VIOLATION: info(
    "error",
    false,
    false,
    "unknown",
    "A wrap hook broke the execution contract; the result was discarded.",
  ),
  USER_DENIED: info(
    "denied",
    false,
    false,
    false,
    "The user declined. Do not repeat the same call unchanged.",
  ),
  PATH_ESCAPE: info("denied", false, false, false, "Use a path inside the workspace, relative to its root."),
  RESERVED_PATH: info(
    "denied",
    false,
    false,
    false,
    "The .harness directory is reserved for harness itself.",
  ),
  PROTECTED_PATH: info(
    "denied",
    false,
    false,
    false,
    "The host runs or obeys this file (git metadata, harness config, hook scripts); it can be read but never changed. Do not retry; change something else.",
  ),
  INVALID_PATH: info(
    "invalid",
    false,
    false,
    false,
    "Use a plain workspace-relative path such as src/app.ts.",
  ),
  NOT_FOUND: info("error", false, false, false, "Check the path; use glob or grep to locate files."),
  IS_DIRECTORY: info("error", false, false, false, "The path is a directory; use glob to list its files."),
  STALE_VERSION: info(
    "conflict",
    false,
    true,
    false,
    "The file changed since you read it. Read it again, then retry.",
  ),
  FILE_BUSY: info(
    "error",
    true,
    false,
    false,
    "Another process was writing this file and kept its write lock too long; nothing was written. Retry the same call; if the file changed meanwhile, the retry reports STALE_VERSION.",
  ),
  NOT_READ: info(
    "conflict",
    false,
    true,
    false,
    "Read the file first; changes are bound to the version you read.",
  ),
  TEXT_NOT_FOUND: info("error", false, true, false, "Copy old_text exactly from a fresh read of the file."),
  AMBIGUOUS_MATCH: info(
    "error",
    false,
    false,
    false,
    "Include more surrounding text so old_text matches once, or set replace_all.",
  ),
  NO_CHANGE: info("error", false, false, false, "new_text must differ from old_text."),
  INVALID_UTF8: info(
    "error",
    false,
    false,
    false,
    "The file is not valid UTF-8 text and cannot be read as text.",
  ),
  INVALID_REGEX: info("invalid", false, false, false, "Fix the regular expression syntax."),
  REGEX_TOO_SLOW: info(
    "error",
    false,
    false,
    false,
    "The pattern backtracks too much; simplify it (no nested quantifiers such as (a+)+) or narrow path/include.",
  ),
  ARTIFACT_NOT_FOUND: info(
    "error",
    false,
    false,
    false,
    "Use an artifact id returned by an earlier tool result.",
  ),
  ARTIFACT_CORRUPT: info(
    "error",
    false,
    false,
    false,
    "The stored artifact no longer matches its SHA-256 (it was changed on disk); its bytes are not shown. Do not rely on it.",
  ),
  TIMEOUT: info(
    "timeout",
    true,
    false,
    "unknown",
    "The call ran out of time; narrow it or raise its timeout.",
  ),
  CANCELLED: info("cancelled", true, false, "unknown", "The run was cancelled before the call completed."),
  OUTPUT_LIMIT: info("error", false, false, true, "The output was too large; narrow the request."),
  BUDGET_EXHAUSTED: info("denied", false, false, false, "The run's tool budget is used up."),
  UNKNOWN_OUTCOME: info(
    "unknown",
    false,
    true,
    "unknown",
    "The call started but its outcome was never recorded; check the workspace before acting.",
  ),
  PROCESS_ERROR: info("error", false, false, true, "The command exited with a failure; read its output."),
  SANDBOX_UNAVAILABLE: info(
    "denied",
    false,
    false,
    false,
    "The required sandbox cannot start here; the user must install it or opt out.",
  ),
  SANDBOX_VIOLATION: info(
    "error",
    false,
    false,
    "unknown",
    "The sandbox refused an operation outside what this command may touch.",
  ),
  IO_ERROR: info("error", true, false, "unknown", "A file-system operation failed."),
  RUNTIME_EXCEPTION: info("error", false, false, "unknown", "The tool failed unexpectedly."),
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

function info(
  status: ToolStatus,
  retryable: boolean,
  requiresNewObservation: boolean,
  operationApplied: boolean | "unknown",
  hint: string,
): ErrorCodeInfo {
  return { status, retryable, requiresNewObservation, operationApplied, hint };
}

/**
 * A known, expected tool failure. Handlers throw it; the runtime turns it into a result the
 * model sees. Messages name relative paths only.
 */
export class ToolError extends CodedError<ErrorCode> {
  override readonly name = "ToolError";
  readonly hint?: string;
  readonly data?: Record<string, unknown>;
  constructor(
    code: ErrorCode,
    message: string,
    options: { hint?: string; data?: Record<string, unknown> } = {},
  ) {
    super(code, message);
    if (options.hint !== undefined) this.hint = options.hint;
    if (options.data !== undefined) this.data = options.data;
  }
}
