import { z } from "zod";
import { ErrorCode, type RpcErrorObject, wireIssues } from "./errors.js";
import { isMethodName, METHODS, type MethodName, type ParsedParamsOf, type ResultOf } from "./methods.js";

/**
 * JSON-RPC 2.0 envelopes and the server's first look at a message: is it a request we know, with
 * params that parse? Everything that arrives is `unknown` until it passes here.
 */

export const requestId = z.union([z.string(), z.number().int()]);
export type RequestId = z.infer<typeof requestId>;

export const rpcErrorObject = z.object({
  code: z.number().int(),
  message: z.string(),
  data: z.unknown().optional(),
});

export const successResponse = z.object({ jsonrpc: z.literal("2.0"), id: requestId, result: z.unknown() });
export const errorResponse = z.object({
  jsonrpc: z.literal("2.0"),
  id: requestId.nullable(),
  error: rpcErrorObject,
});
export const response = z.union([successResponse, errorResponse]);
export const notificationEnvelope = z.object({
  jsonrpc: z.literal("2.0"),
  method: z.string(),
  params: z.unknown().optional(),
});

export interface SuccessResponse<R = unknown> {
  jsonrpc: "2.0";
  id: RequestId;
  result: R;
}
export interface ErrorResponse {
  jsonrpc: "2.0";
  id: RequestId | null;
  error: RpcErrorObject;
}
export type Response = SuccessResponse | ErrorResponse;

export interface Request<M extends MethodName = MethodName> {
  jsonrpc: "2.0";
  id: RequestId;
  method: M;
  params: ParsedParamsOf<M>;
}

/** A parsed request, narrowed by its method name. */
export type AnyRequest = { [M in MethodName]: Request<M> }[MethodName];

export type ParsedMessage =
  | { kind: "request"; request: AnyRequest }
  /** A client notification (no id): JSON-RPC says it gets no answer, even when it is wrong. */
  | { kind: "notification"; method: string }
  | { kind: "error"; response: ErrorResponse };

export function errorResponseFor(id: RequestId | null, error: RpcErrorObject): ErrorResponse {
  return { jsonrpc: "2.0", id, error };
}

export function successResponseFor<M extends MethodName>(
  id: RequestId,
  result: ResultOf<M>,
): SuccessResponse {
  return { jsonrpc: "2.0", id, result };
}

/** The response to a line that is not JSON. */
export function parseErrorResponse(message = "parse error: the line is not JSON"): ErrorResponse {
  return errorResponseFor(null, { code: ErrorCode.ParseError, message });
}

function invalid(id: RequestId | null, message: string): ParsedMessage {
  return { kind: "error", response: errorResponseFor(id, { code: ErrorCode.InvalidRequest, message }) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A decoded line as a request of this protocol, or the JSON-RPC error to answer it with:
 * -32600 for what is not a request (batches included), -32601 for an unknown method, -32602 with
 * short zod issues for params that do not parse. Omitted params are `{}`.
 */
export function parseRequest(value: unknown): ParsedMessage {
  if (Array.isArray(value)) return invalid(null, "invalid request: batches are not supported");
  if (!isObject(value)) return invalid(null, "invalid request: a request is a JSON object");
  const hasId = Object.hasOwn(value, "id");
  const idCheck = requestId.safeParse(value.id);
  const id = idCheck.success ? idCheck.data : null;
  if (value.jsonrpc !== "2.0") return invalid(id, 'invalid request: "jsonrpc" must be "2.0"');
  if (typeof value.method !== "string") return invalid(id, 'invalid request: "method" must be a string');
  if (hasId && !idCheck.success) return invalid(null, 'invalid request: "id" must be a string or an integer');
  const params = value.params === undefined ? {} : value.params;
  if (!isObject(params)) return invalid(id, 'invalid request: "params" must be an object');
  if (!hasId) return { kind: "notification", method: value.method };
  const method = value.method;
  if (!isMethodName(method)) {
    return {
      kind: "error",
      response: errorResponseFor(id, {
        code: ErrorCode.MethodNotFound,
        message: `method not found: ${clip(method)}`,
      }),
    };
  }
  const parsed = METHODS[method].params.safeParse(params);
  if (!parsed.success) {
    return {
      kind: "error",
      response: errorResponseFor(id, {
        code: ErrorCode.InvalidParams,
        message: `invalid params for ${method}`,
        data: { issues: wireIssues(parsed.error.issues) },
      }),
    };
  }
  return {
    kind: "request",
    request: { jsonrpc: "2.0", id: idCheck.data as RequestId, method, params: parsed.data } as AnyRequest,
  };
}

function clip(text: string): string {
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}
