import type { ToolStatus } from "../protocol/types.js";
import { CodedError } from "../shared/coded-error.js";

/**
 * Whether a failed call may be tried again unchanged: `no`; `resend` (the model may send the
 * same call again); `transient` (the failure is expected to pass: the runtime itself retries an
 * idempotent call with back-off before the model sees it, and the model may resend it too).
 */
export type Retry = "no" | "resend" | "transient";

/**
 * The error taxonomy: one stable code per way a tool call can fail, with what it means for the
 * caller. `retryable`: the same call may be sent again unchanged; `transient`: the runtime
 * retries it itself (see `Retry`). `requiresNewObservation`: read again before retrying.
 * `operationApplied`: whether the world may have changed.
 */
export interface ErrorCodeInfo {
  status: ToolStatus;
  retryable: boolean;
  transient: boolean;
  requiresNewObservation: boolean;
  operationApplied: boolean | "unknown";
  hint: string;
}

export const ERROR_CODES = {
  UNKNOWN_TOOL: info("invalid", "no", false, false, "Call one of the available tools listed."),
  TOOL_NOT_LOADED: info(
    "invalid",
    "no",
    false,
    false,
    "The tool exists but its definition is not loaded: call tool_search to load it, then call it.",
  ),
  TOOL_SCHEMA_CHANGED: info(
    "invalid",
    "no",
    false,
    false,
    "The tool's definition changed since it was loaded: call tool_search with its name to load the new one.",
  ),
  INVALID_ARGUMENTS: info("invalid", "no", false, false, "Fix the named fields to match the tool's schema."),
  SEMANTIC_VALIDATION_ERROR: info(
    "invalid",
    "no",
    false,
    false,
    "The arguments are well-formed but inconsistent; fix them.",
  ),
  POLICY_DENIED: info(
    "denied",
    "no",
    false,
    false,
    "Blocked by policy. Do not repeat the same call unchanged; choose another approach.",
  ),
  HOOK_DENIED: info(
    "denied",
    "no",
    false,
    false,
    "A policy hook refused this call. Do not repeat it unchanged.",
  ),
  HOOK_VIOLATION: info(
    "error",
    "no",
    false,
    "unknown",
    "A wrap hook broke the execution contract; the result was discarded.",
  ),
  USER_DENIED: info(
    "denied",
    "no",
    false,
    false,
    "The user declined. Do not repeat the same call unchanged.",
  ),
  PATH_ESCAPE: info("denied", "no", false, false, "Use a path inside the workspace, relative to its root."),
  RESERVED_PATH: info("denied", "no", false, false, "The .harness directory is reserved for harness itself."),
  PROTECTED_PATH: info(
    "denied",
    "no",
    false,
    false,
    "The host runs or obeys this file (git metadata, harness config, hook scripts); it can be read but never changed. Do not retry; change something else.",
  ),
  INVALID_PATH: info(
    "invalid",
    "no",
    false,
    false,
    "Use a plain workspace-relative path such as src/app.ts.",
  ),
  NOT_FOUND: info("error", "no", false, false, "Check the path; use glob or grep to locate files."),
  IS_DIRECTORY: info("error", "no", false, false, "The path is a directory; use glob to list its files."),
  STALE_VERSION: info(
    "conflict",
    "no",
    true,
    false,
    "The file changed since you read it. Read it again, then retry.",
  ),
  FILE_BUSY: info(
    "error",
    "resend",
    false,
    false,
    "Another process was writing this file and kept its write lock too long; nothing was written. Retry the same call; if the file changed meanwhile, the retry reports STALE_VERSION.",
  ),
  NOT_READ: info(
    "conflict",
    "no",
    true,
    false,
    "Read the file first; changes are bound to the version you read.",
  ),
  TEXT_NOT_FOUND: info("error", "no", true, false, "Copy old_text exactly from a fresh read of the file."),
  AMBIGUOUS_MATCH: info(
    "error",
    "no",
    false,
    false,
    "Include more surrounding text so old_text matches once, or set replace_all.",
  ),
  NO_CHANGE: info("error", "no", false, false, "new_text must differ from old_text."),
  INVALID_UTF8: info(
    "error",
    "no",
    false,
    false,
    "The file is not valid UTF-8 text and cannot be read as text.",
  ),
  INVALID_REGEX: info("invalid", "no", false, false, "Fix the regular expression syntax."),
  REGEX_TOO_SLOW: info(
    "error",
    "no",
    false,
    false,
    "The pattern backtracks too much; simplify it (no nested quantifiers such as (a+)+) or narrow path/include.",
  ),
  ARTIFACT_NOT_FOUND: info(
    "error",
    "no",
    false,
    false,
    "Use an artifact id returned by an earlier tool result.",
  ),
  ARTIFACT_CORRUPT: info(
    "error",
    "no",
    false,
    false,
    "The stored artifact no longer matches its SHA-256 (it was changed on disk); its bytes are not shown. Do not rely on it.",
  ),
  TIMEOUT: info(
    "timeout",
    "resend",
    false,
    "unknown",
    "The call ran out of time; narrow it or raise its timeout.",
  ),
  CANCELLED: info(
    "cancelled",
    "resend",
    false,
    "unknown",
    "The run was cancelled before the call completed.",
  ),
  OUTPUT_LIMIT: info("error", "no", false, true, "The output was too large; narrow the request."),
  BUDGET_EXHAUSTED: info("denied", "no", false, false, "The run's tool budget is used up."),
  AGENT_LIMIT: info(
    "denied",
    "no",
    false,
    false,
    "A delegation limit (depth, concurrent children or children per session) refuses this child; do the work yourself or wait for running children.",
  ),
  BUDGET_EXCEEDED: info(
    "denied",
    "no",
    false,
    false,
    "The child's budget is more than this session has left; ask for less (the result says what is left).",
  ),
  UNKNOWN_OUTCOME: info(
    "unknown",
    "no",
    true,
    "unknown",
    "The call started but its outcome was never recorded; check the workspace before acting.",
  ),
  PROCESS_ERROR: info("error", "no", false, true, "The command exited with a failure; read its output."),
  SANDBOX_UNAVAILABLE: info(
    "denied",
    "no",
    false,
    false,
    "The required sandbox cannot start here; the user must install it or opt out.",
  ),
  SANDBOX_VIOLATION: info(
    "error",
    "no",
    false,
    "unknown",
    "The sandbox refused an operation outside what this command may touch.",
  ),
  IO_ERROR: info("error", "transient", false, "unknown", "A file-system operation failed."),
  RUNTIME_EXCEPTION: info("error", "no", false, "unknown", "The tool failed unexpectedly."),
  // A tool someone else runs (an MCP server's) answered that the call failed.
  TOOL_FAILED: info(
    "error",
    "no",
    false,
    "unknown",
    "The tool reported a failure; read its message, then fix the call or choose another approach.",
  ),
  MCP_UNAVAILABLE: info(
    "error",
    "resend",
    false,
    false,
    "The MCP server could not be reached and nothing was sent to it; the next call to it reconnects once.",
  ),
  MCP_CONNECTION_LOST: info(
    "error",
    "transient",
    false,
    "unknown",
    "The connection to the MCP server was lost during a call its server marks read-only or idempotent; sending it again is safe.",
  ),
  MCP_OUTCOME_UNKNOWN: info(
    "unknown",
    "no",
    true,
    "unknown",
    "The connection to the MCP server was lost while the call ran; whether it took effect is unknown. Do not repeat it: a person must check.",
  ),
  // `web_fetch`: the session has no network, a hop was refused, or the fetch itself failed.
  NETWORK_OFF: info(
    "denied",
    "no",
    false,
    false,
    "This session has no network (--network off): web_fetch works only in a session started with --network policy and a net(HOST[:PORT]) rule; do not retry.",
  ),
  NETWORK_DENIED: info(
    "denied",
    "no",
    false,
    false,
    "A connection was refused by the net(...) rules or the private-address check (the message names the host); fetch something else or ask the user to allow it.",
  ),
  FETCH_FAILED: info(
    "error",
    "resend",
    false,
    false,
    "The fetch failed (connection, TLS, a timeout or too many redirects); it may be tried again later.",
  ),
  // A `batch` program: what it may call, how far it may go, how it ended. Every sub-call is read-only.
  BATCH_TOOL_FORBIDDEN: info(
    "denied",
    "no",
    false,
    false,
    "A batch program may call only read-only tools; make writes, commands and messages as calls of their own.",
  ),
  BATCH_LIMIT: info(
    "error",
    "no",
    false,
    false,
    "The program went past a bound (data.limit names it); gather less per batch or split the work.",
  ),
  BATCH_PROGRAM_ERROR: info(
    "error",
    "no",
    false,
    false,
    "The program threw or did not parse; fix it (data.failed lists sub-calls that failed).",
  ),
} as const satisfies Record<string, ErrorCodeInfo>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes whose failures the runtime retries itself (for idempotent tools), from the table. */
export const TRANSIENT_ERROR_CODES: ReadonlySet<string> = new Set(
  Object.entries(ERROR_CODES).flatMap(([code, entry]) => (entry.transient ? [code] : [])),
);

function info(
  status: ToolStatus,
  retry: Retry,
  requiresNewObservation: boolean,
  operationApplied: boolean | "unknown",
  hint: string,
): ErrorCodeInfo {
  return {
    status,
    retryable: retry !== "no",
    transient: retry === "transient",
    requiresNewObservation,
    operationApplied,
    hint,
  };
}

/**
 * A known, expected tool failure. Handlers throw it; the runtime turns it into a result the
 * model sees. Messages name relative paths only.
 */
export class ToolError extends CodedError<ErrorCode> {
  override readonly name = "ToolError";
  readonly hint?: string;
  readonly data?: Record<string, unknown>;
  /** When the thrower knows better than the code's default (e.g. a read-only tool changed nothing). */
  readonly operationApplied?: boolean | "unknown";
  /** The message came from outside the user's trust (an untrusted MCP server): its provenance. */
  readonly untrusted?: string;
  constructor(
    code: ErrorCode,
    message: string,
    options: {
      hint?: string;
      data?: Record<string, unknown>;
      operationApplied?: boolean | "unknown";
      untrusted?: string;
    } = {},
  ) {
    super(code, message);
    if (options.hint !== undefined) this.hint = options.hint;
    if (options.data !== undefined) this.data = options.data;
    if (options.operationApplied !== undefined) this.operationApplied = options.operationApplied;
    if (options.untrusted !== undefined) this.untrusted = options.untrusted;
  }
}
