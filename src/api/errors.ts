/**
 * JSON-RPC error codes of the harness server protocol, in one table. The standard ones
 * (-32700..-32603) keep their JSON-RPC meaning; the -3200x codes are harness's own. A "not found"
 * is also what an identity gets for a session it may not see, so the answer never leaks existence.
 */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  Unauthorized: -32001,
  NotFound: -32002,
  Conflict: -32003,
  Forbidden: -32004,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** A zod issue as it goes on the wire: where and what, nothing more. */
export interface WireIssue {
  path: string;
  message: string;
}

/** What `error.data` may carry: harness's string code (e.g. "SESSION_NOT_FOUND"), zod issues for -32602. */
export interface ErrorData {
  code?: string;
  issues?: WireIssue[];
  [key: string]: unknown;
}

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * A JSON-RPC error as a thrown value: the server's method handlers throw it and the transport
 * turns it into the response; the client throws it for an error response (and for a server whose
 * output breaks the protocol, with `InternalError` and `data.code` "PROTOCOL_VIOLATION").
 */
export class RpcError extends Error {
  override readonly name = "RpcError";
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }

  /** harness's string code in `data.code`, when there is one. */
  get harnessCode(): string | undefined {
    const data = this.data;
    if (typeof data === "object" && data !== null && "code" in data && typeof data.code === "string") {
      return data.code;
    }
    return undefined;
  }

  toJSON(): RpcErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

const MAX_ISSUES = 10;
const MAX_MESSAGE = 200;

/** zod issues cut short for the wire: at most ten, each a dotted path and a message of bounded length. */
export function wireIssues(
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
): WireIssue[] {
  return issues.slice(0, MAX_ISSUES).map((issue) => ({
    path: issue.path.map(String).join("."),
    message: issue.message.length > MAX_MESSAGE ? `${issue.message.slice(0, MAX_MESSAGE)}…` : issue.message,
  }));
}
