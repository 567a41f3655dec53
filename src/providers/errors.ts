import {
  APICallError,
  EmptyResponseBodyError,
  InvalidArgumentError,
  InvalidPromptError,
  InvalidResponseDataError,
  JSONParseError,
  LoadAPIKeyError,
  TypeValidationError,
  UnsupportedFunctionalityError,
} from "@ai-sdk/provider";
import { errnoCode } from "../shared/errno.js";
import { isJsonObject } from "../shared/json.js";
import { ProviderError, type ProviderErrorCode, type ProviderErrorDetails } from "./provider.js";
import { type HeaderSource, headerValue, parseRetryAfter } from "./retry-after.js";

/**
 * Error normalization: every failure of a model request becomes one `ProviderError` code.
 *
 * Classification uses the provider's error code and type first, then the message, and the
 * HTTP status last, because status alone misleads: OpenAI sends `insufficient_quota` as 429,
 * Anthropic reports a too-long prompt as a plain 400, and a 200 stream can carry an error.
 *
 * Decisions:
 * - `insufficient_quota` / billing messages are QUOTA even on 429 (waiting does not help).
 * - A 429 `rate_limit_exceeded` (or Anthropic `rate_limit_error`) is RATE_LIMIT even when the
 *   message says the request alone is larger than the tokens-per-minute limit ("Request too
 *   large"): the provider classifies it as a rate limit and the retry budget bounds the cost.
 * - `context_length_exceeded`, "prompt is too long" and HTTP 413 are CONTEXT_WINDOW_EXCEEDED.
 * - 529 and `overloaded_error` are OVERLOADED; 503 too (OpenAI's "engine is overloaded").
 */

const MAX_MESSAGE_CHARS = 400;

/** Fields found in a provider error body, whatever its vendor shape. */
export interface ErrorFields {
  message?: string;
  code?: string;
  type?: string;
  numericCode?: number;
  requestId?: string;
}

/**
 * Read the common vendor shapes: OpenAI `{error:{message,type,code,param}}`, Anthropic
 * `{type:"error",error:{type,message},request_id}`, stream frames `{type:"error",error:{...}}`,
 * vLLM `{object:"error",message,type,code}`, Ollama `{error:"..."}`, and bare `{message}`.
 */
function extractErrorFields(body: unknown): ErrorFields {
  const fields: ErrorFields = {};
  if (!isJsonObject(body)) return fields;
  const inner = isJsonObject(body.error) ? body.error : body;
  const message = firstString(inner.message, body.error, body.message, body.detail);
  if (message !== undefined) fields.message = message;
  if (typeof inner.code === "string" && inner.code !== "") fields.code = inner.code;
  if (typeof inner.code === "number") fields.numericCode = inner.code;
  const type = typeof inner.type === "string" && inner.type !== "error" ? inner.type : undefined;
  if (type !== undefined) fields.type = type;
  const requestId = firstString(body.request_id, inner.request_id);
  if (requestId !== undefined) fields.requestId = requestId;
  return fields;
}

function firstString(...values: unknown[]): string | undefined {
  for (const value of values) if (typeof value === "string" && value.trim() !== "") return value;
  return undefined;
}

/** Parse a response body for classification; non-JSON stays undefined. */
export function parseErrorBody(text: string | undefined): unknown {
  if (text === undefined || text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export interface FailureInput {
  /** Provider kind for the message prefix, e.g. "anthropic". */
  provider: string;
  /** HTTP status of the response; undefined for errors inside a 200 stream. */
  status?: number | undefined;
  body?: unknown;
  headers?: HeaderSource;
  /** Key values that must never appear in the message. */
  secrets: readonly string[];
}

const CONTEXT_PATTERN =
  /context[ _-]?(length|window)|maximum context|prompt is too long|too many tokens in (the )?prompt|input is too long|reduce the length of the messages|exceeds? the (model'?s? )?(maximum )?(context|token limit)/i;
const QUOTA_PATTERN =
  /insufficient_quota|exceeded your current quota|billing|credit balance is too low|quota exceeded/i;

/** Classify an HTTP error response (or an error object inside a stream) into a code. */
export function classifyFailure(input: FailureInput): ProviderError {
  const fields = extractErrorFields(input.body);
  const status = input.status ?? statusFromNumericCode(fields.numericCode);
  const code = decideCode(status, fields);
  const details: ProviderErrorDetails = {};
  if (input.status !== undefined) details.status = input.status;
  const providerCode = fields.code ?? fields.type;
  if (providerCode !== undefined) details.providerCode = providerCode;
  const requestId =
    headerValue(input.headers, "x-request-id") ??
    headerValue(input.headers, "request-id") ??
    fields.requestId;
  if (requestId !== undefined) details.requestId = requestId;
  const retryAfterMs = parseRetryAfter(input.headers);
  if (retryAfterMs !== undefined) details.retryAfterMs = retryAfterMs;
  const what =
    fields.message ?? (status !== undefined ? `HTTP ${status}` : "error event in the response stream");
  return new ProviderError(code, formatMessage(input.provider, what, input.secrets), details);
}

function statusFromNumericCode(code: number | undefined): number | undefined {
  return code !== undefined && Number.isInteger(code) && code >= 400 && code <= 599 ? code : undefined;
}

function decideCode(status: number | undefined, fields: ErrorFields): ProviderErrorCode {
  const code = (fields.code ?? "").toLowerCase();
  const type = (fields.type ?? "").toLowerCase();
  const message = fields.message ?? "";
  const tag = `${code} ${type}`;

  const authStatus = status === 401 || status === 403;
  if (/insufficient_quota|billing/.test(tag) || (!authStatus && QUOTA_PATTERN.test(message))) return "QUOTA";
  if (authStatus || /invalid_api_key|authentication|permission|unauthorized/.test(tag)) {
    return "AUTH";
  }
  if (status === 429 || /rate_limit/.test(tag)) return "RATE_LIMIT";
  if (
    status === 413 ||
    /context_length_exceeded|request_too_large|string_above_max_length/.test(tag) ||
    CONTEXT_PATTERN.test(message)
  ) {
    return "CONTEXT_WINDOW_EXCEEDED";
  }
  if (status === 529 || status === 503 || /overloaded/.test(tag)) return "OVERLOADED";
  if (status === 404 || /not_found/.test(tag)) return "NOT_FOUND";
  if (status === 408 || status === 504 || /timeout/.test(tag)) return "TIMEOUT";
  if (status !== undefined && status >= 500) return "SERVER";
  if (status !== undefined && status >= 400) return "INVALID_REQUEST";
  if (/invalid_request|bad_request|invalid_prompt/.test(tag)) return "INVALID_REQUEST";
  // An error event inside a 200 stream with no recognisable kind: the server failed mid-reply.
  return "SERVER";
}

/** `provider: message`, single-line, bounded, with every secret removed. */
export function formatMessage(provider: string, message: string, secrets: readonly string[]): string {
  const oneLine = redactSecrets(message, secrets).replace(/\s+/g, " ").trim();
  const bounded = oneLine.length > MAX_MESSAGE_CHARS ? `${oneLine.slice(0, MAX_MESSAGE_CHARS)}…` : oneLine;
  return `${provider}: ${bounded}`;
}

/**
 * Remove keys from text that came from a server or a library. Besides the exact secrets,
 * anything shaped like an API key is masked, because providers echo (partially masked) keys
 * back in 401 messages.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join("[redacted]");
  }
  return out
    .replace(/\b(sk|rk|pk)-[A-Za-z0-9_*.-]{4,}/g, "[redacted]")
    .replace(/\b(Bearer)\s+[A-Za-z0-9._~+/=*-]+/gi, "$1 [redacted]")
    .replace(/(api[_ -]?key provided:?)\s*\S+/gi, "$1 [redacted]");
}

export interface NormalizeContext {
  provider: string;
  secrets: readonly string[];
  /** Headers of the successful response, when the failure happened inside its stream. */
  responseHeaders?: HeaderSource | undefined;
  /** Why our own abort signal fired, if it did. */
  abortedBy?: "caller" | "timeout" | "deadline" | undefined;
}

const NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

/**
 * Normalize anything thrown while requesting or reading a model stream. Never copies `cause`,
 * stack, request bodies or headers into the result.
 */
export function normalizeProviderError(error: unknown, context: NormalizeContext): ProviderError {
  if (error instanceof ProviderError) return error;
  // harness's own check inside the SDK's stream handling (an event over MAX_SSE_EVENT_SIZE) comes
  // back wrapped as "Failed to process successful response": its verdict (not retried) stands.
  if (error instanceof Error && error.cause instanceof ProviderError) return error.cause;
  const { provider, secrets } = context;
  if (context.abortedBy === "deadline") {
    return new ProviderError(
      "TIMEOUT",
      `${provider}: the request did not finish within its overall deadline`,
      {
        providerCode: "request_deadline",
      },
    );
  }
  if (context.abortedBy === "timeout") {
    return new ProviderError("TIMEOUT", `${provider}: no progress within the configured timeout`);
  }
  if (context.abortedBy === "caller") {
    return new ProviderError("CANCELLED", `${provider}: request cancelled`, { retryable: false });
  }
  const tlsCode = untrustedCertificateCode(error);
  if (tlsCode !== undefined) {
    // Waiting does not make a certificate trusted: stop with what to do instead of retrying.
    return new ProviderError(
      "TRANSPORT",
      `${provider}: the endpoint's TLS certificate is not trusted (${tlsCode}); if the server is yours, ` +
        "add its CA certificate with NODE_EXTRA_CA_CERTS=/path/to/ca.pem",
      { retryable: false, providerCode: tlsCode },
    );
  }
  if (APICallError.isInstance(error)) return fromApiCallError(error, context);
  if (EmptyResponseBodyError.isInstance(error)) {
    return new ProviderError("EMPTY_RESPONSE", `${provider}: the response had no body`);
  }
  if (isNetworkFailure(error)) {
    return new ProviderError(
      "TRANSPORT",
      formatMessage(provider, `connection failed: ${describe(error)}`, secrets),
    );
  }
  if (isJsonObject(error) && !(error instanceof Error)) {
    // Error objects delivered as stream parts (e.g. `{message,type,code}` inside a 200 stream).
    return classifyFailure({
      provider,
      body: { error },
      headers: context.responseHeaders,
      secrets,
    });
  }
  const message = describe(error);
  if (/without a finish reason/i.test(message)) {
    return new ProviderError(
      "TRANSPORT",
      formatMessage(provider, "stream ended before the model finished", secrets),
    );
  }
  // The AI SDK's errors carry a global-symbol brand, so `isInstance` holds across package copies.
  if (
    InvalidResponseDataError.isInstance(error) ||
    JSONParseError.isInstance(error) ||
    TypeValidationError.isInstance(error)
  ) {
    return new ProviderError("SERVER", formatMessage(provider, `malformed response: ${message}`, secrets), {
      providerCode: "invalid_response",
    });
  }
  if (
    UnsupportedFunctionalityError.isInstance(error) ||
    InvalidPromptError.isInstance(error) ||
    InvalidArgumentError.isInstance(error)
  ) {
    return new ProviderError("INVALID_REQUEST", formatMessage(provider, message, secrets), {
      retryable: false,
    });
  }
  if (LoadAPIKeyError.isInstance(error)) {
    return new ProviderError("AUTH", formatMessage(provider, "API key is missing", secrets));
  }
  // Unknown failures are most likely bugs: report them, but never retry them blindly.
  return new ProviderError("SERVER", formatMessage(provider, `unexpected failure: ${message}`, secrets), {
    retryable: false,
  });
}

function fromApiCallError(error: APICallError, context: NormalizeContext): ProviderError {
  const { provider, secrets } = context;
  // The raw body keeps fields the SDK's error schema drops (Anthropic's top-level request_id).
  const raw = parseErrorBody(error.responseBody);
  const body = isJsonObject(raw) ? raw : isJsonObject(error.data) ? error.data : undefined;
  // The AI SDK turns an error event inside a 200 stream into an APICallError with an invented
  // status; the response's content type tells the two apart.
  const streamFrame =
    body !== undefined &&
    /text\/event-stream/i.test(headerValue(error.responseHeaders, "content-type") ?? "");
  if (error.statusCode === undefined || (!streamFrame && error.statusCode < 400)) {
    // No HTTP error: the connection failed or the body could not be read.
    if (isNetworkFailure(error.cause) || error.statusCode === undefined) {
      return new ProviderError(
        "TRANSPORT",
        formatMessage(provider, `connection failed: ${describe(error.cause ?? error)}`, secrets),
        requestIdOnly(error.responseHeaders ?? context.responseHeaders),
      );
    }
    return new ProviderError("SERVER", formatMessage(provider, error.message, secrets), {
      status: error.statusCode,
      providerCode: "invalid_response",
    });
  }
  const frameBody = streamFrame && isJsonObject(body) ? frameAsErrorBody(body) : body;
  const input: FailureInput = {
    provider,
    body: frameBody ?? { error: { message: error.message } },
    headers: error.responseHeaders ?? context.responseHeaders,
    secrets,
  };
  // The AI SDK invents a status for errors found inside a 200 stream; do not report it as HTTP.
  if (!streamFrame) input.status = error.statusCode;
  return classifyFailure(input);
}

/** OpenAI Responses `response.failed` frames keep the error under `response.error`. */
function frameAsErrorBody(frame: Record<string, unknown>): unknown {
  if (
    frame.type === "response.failed" &&
    isJsonObject(frame.response) &&
    isJsonObject(frame.response.error)
  ) {
    return { error: frame.response.error };
  }
  return frame;
}

function requestIdOnly(headers: HeaderSource): ProviderErrorDetails {
  const requestId = headerValue(headers, "x-request-id") ?? headerValue(headers, "request-id");
  return requestId === undefined ? {} : { requestId };
}

/** Node's codes for a certificate chain or name that failed verification. */
const UNTRUSTED_CERTIFICATE_CODES = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_UNTRUSTED",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** The verification code of a TLS failure anywhere in the cause chain (fetch wraps it). */
function untrustedCertificateCode(error: unknown): string | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    const code = errnoCode(current);
    if (code !== undefined && UNTRUSTED_CERTIFICATE_CODES.has(code)) return code;
    current = current.cause;
  }
  return undefined;
}

function isNetworkFailure(error: unknown): boolean {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 5; depth += 1) {
    if (!(current instanceof Error)) return false;
    const code = errnoCode(current);
    if (code !== undefined && NETWORK_CODES.has(code)) return true;
    if (
      current instanceof TypeError &&
      /^(terminated|fetch failed|other side closed)$/i.test(current.message)
    ) {
      return true;
    }
    // Node's built-in fetch (undici) does not export its error classes: only their names tell them apart.
    if (/SocketError|ConnectTimeoutError|HeadersTimeoutError|BodyTimeoutError/.test(current.name))
      return true;
    current = current.cause;
  }
  return false;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = errnoCode(error);
    return code !== undefined ? `${error.message} (${code})` : error.message;
  }
  return typeof error === "string" ? error : "unknown error";
}
