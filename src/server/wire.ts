/*
 * JSON-RPC 2.0 as the server speaks it: error codes, the error a handler throws, and line
 * framing (one JSON object per line, split on "\n" only). Kept minimal and local so the
 * transports share one reading of the wire.
 */

export const RPC = {
  PARSE: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
  UNAUTHORIZED: -32001,
  NOT_FOUND: -32002,
  CONFLICT: -32003,
  FORBIDDEN: -32004,
} as const;

/** The longest line taken: a longer one is an error (the connection lives on). */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** A failure a method reports to its caller: code, message, and optional structured data. */
export class RpcError extends Error {
  override readonly name = "RpcError";
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export type RpcId = string | number | null;

export interface RpcRequest {
  id?: RpcId;
  method: string;
  params: Record<string, unknown>;
}

export type Incoming =
  | { kind: "request"; request: RpcRequest }
  | { kind: "error"; id: RpcId; error: RpcError };

/** Read one line (or one HTTP body) as a request, or as the error to answer it with. */
export function parseMessage(text: string): Incoming {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: "error", id: null, error: new RpcError(RPC.PARSE, "parse error: the line is not JSON") };
  }
  if (Array.isArray(value))
    return { kind: "error", id: null, error: new RpcError(RPC.INVALID_REQUEST, "batches are not supported") };
  if (typeof value !== "object" || value === null)
    return {
      kind: "error",
      id: null,
      error: new RpcError(RPC.INVALID_REQUEST, "a request is a JSON object"),
    };
  const message = value as Record<string, unknown>;
  const id = validId(message.id) ? (message.id as RpcId) : null;
  if (message.jsonrpc !== "2.0" || typeof message.method !== "string" || !validId(message.id ?? null))
    return {
      kind: "error",
      id,
      error: new RpcError(RPC.INVALID_REQUEST, 'invalid request: need {"jsonrpc": "2.0", "method", "id"?}'),
    };
  const params = message.params ?? {};
  if (typeof params !== "object" || params === null || Array.isArray(params))
    return { kind: "error", id, error: new RpcError(RPC.INVALID_PARAMS, "params must be an object") };
  return {
    kind: "request",
    request: {
      ...("id" in message ? { id: message.id as RpcId } : {}),
      method: message.method,
      params: params as Record<string, unknown>,
    },
  };
}

function validId(id: unknown): boolean {
  return id === null || typeof id === "string" || (typeof id === "number" && Number.isFinite(id));
}

/** JSON text safe on one line anywhere (U+2028/U+2029 escaped: JavaScript line terminators). */
export function encodeJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

export function resultMessage(id: RpcId, result: unknown): string {
  return encodeJson({ jsonrpc: "2.0", id, result });
}

export function errorMessage(id: RpcId, error: RpcError): string {
  return encodeJson({
    jsonrpc: "2.0",
    id,
    error: { code: error.code, message: error.message, ...(error.data ? { data: error.data } : {}) },
  });
}

export function notificationMessage(method: string, params: unknown): string {
  return encodeJson({ jsonrpc: "2.0", method, params });
}

/**
 * Splits a byte stream into lines on "\n" only (a trailing "\r" is stripped; U+2028 inside a
 * string is content). A line over the limit is reported once and skipped up to its end.
 */
export class LineSplitter {
  #pending: Buffer[] = [];
  #size = 0;
  #overlong = false;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly onOverlong: () => void,
    private readonly limit = MAX_LINE_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(0x0a, start);
      if (end === -1) {
        this.#take(chunk.subarray(start));
        return;
      }
      this.#take(chunk.subarray(start, end));
      this.#finish();
      start = end + 1;
    }
  }

  #take(part: Buffer): void {
    if (this.#overlong || part.length === 0) return;
    this.#size += part.length;
    if (this.#size > this.limit) {
      this.#overlong = true;
      this.#pending = [];
      this.onOverlong();
      return;
    }
    this.#pending.push(part);
  }

  #finish(): void {
    if (this.#overlong) {
      this.#overlong = false;
      this.#size = 0;
      return;
    }
    let line = Buffer.concat(this.#pending).toString("utf8");
    this.#pending = [];
    this.#size = 0;
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (line.trim() !== "") this.onLine(line);
  }
}
