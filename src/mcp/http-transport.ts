import {
  type FetchLike,
  isJSONRPCRequest,
  ProtocolError,
  SdkHttpError,
  SSEClientTransport,
  SseError,
  StreamableHTTPClientTransport,
  type Transport,
} from "@modelcontextprotocol/client";
import { boundedResponse } from "../shared/bounded-stream.js";
import type { McpHttpDefinition } from "./config.js";

/** The most one message (an event, or a plain JSON body) may hold, as for a stdio server's line. */
const MAX_HTTP_MESSAGE_BYTES = 16 * 1024 * 1024;

const tooLarge = (what: string): Error => new Error(`the MCP server's answer is too large: ${what}`);

/**
 * The SDK's HTTP transports for a remote server: Streamable HTTP, and the older HTTP+SSE
 * transport for servers that predate it. The configured headers go on every request; the bearer
 * token is read from the variable the definition names when the transport is made, and lives
 * only in memory (never in the definition, its digest or the journal).
 */

export type HttpTransportKind = "streamable-http" | "sse";

/** A remote server whose bearer token variable is not set: nothing was sent. */
export class MissingTokenError extends Error {
  override readonly name = "MissingTokenError";
  constructor(readonly variable: string) {
    super(`bearer_token_env names ${variable}, which is not set in harness's environment`);
  }
}

/**
 * How often a response stream the server closed is resumed (GET with `Last-Event-ID`) before the
 * connection counts as lost: attempts in a row that fail; a resumed stream that delivers events
 * starts the count again.
 */
export const MAX_RESUME_ATTEMPTS = 3;
/**
 * The wait before a resumption when the server names none (its `retry` field wins, never below
 * this), growing per failed attempt.
 */
const RESUME_DELAY_MS = 100;
/** A server's `retry` is honoured up to this; a longer wait is this one. */
const MAX_RESUME_DELAY_MS = 30_000;

/** What the connection learns of a transport's resumptions: how many it scheduled so far. */
export interface ResumeWatch {
  scheduled: number;
}

export function createHttpTransport(
  definition: McpHttpDefinition,
  kind: HttpTransportKind,
  environment: Readonly<Record<string, string | undefined>>,
  watch: ResumeWatch = { scheduled: 0 },
): Transport {
  const url = new URL(definition.url);
  const token = bearerToken(definition, environment);
  const headers = { ...definition.headers };
  const withHeaders: FetchLike = async (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [name, value] of Object.entries(headers)) if (!merged.has(name)) merged.set(name, value);
    // Bounded as a stdio server's lines are: the SDK holds an unfinished event or a whole body.
    return boundedResponse(
      await fetch(input, { ...init, headers: merged }),
      MAX_HTTP_MESSAGE_BYTES,
      tooLarge,
    );
  };
  const options = {
    fetch: withHeaders,
    // A response stream the server closed after an event with an id is resumed as the transport
    // specifies: GET with Last-Event-ID, after the server's `retry` when it sent one. Past the
    // attempts the connection is lost and the calls in flight fail (connection.ts).
    reconnectionOptions: {
      maxRetries: MAX_RESUME_ATTEMPTS,
      initialReconnectionDelay: RESUME_DELAY_MS,
      maxReconnectionDelay: MAX_RESUME_DELAY_MS,
      reconnectionDelayGrowFactor: 2,
    },
    reconnectionScheduler: (reconnect: () => void, delay: number) => {
      watch.scheduled += 1;
      // Never sooner than the base wait: a server that ends every stream at once with `retry: 0`
      // would otherwise be asked again in a tight loop.
      const timer = setTimeout(reconnect, Math.min(Math.max(RESUME_DELAY_MS, delay), MAX_RESUME_DELAY_MS));
      return () => clearTimeout(timer);
    },
    ...(token !== undefined ? { authProvider: { token: async () => token } } : {}),
  };
  if (kind === "sse") return new SSEClientTransport(url, options);
  return answeringEveryRequest(new StreamableHTTPClientTransport(url, options));
}

/** The JSON-RPC error code of the answer harness gives itself for a request whose stream ended unanswered. */
export const STREAM_ENDED_CODE = -32099;
const STREAM_ENDED_DATA = "harness:stream_ended_unanswered";

/**
 * A request's event stream that ends with no answer and cannot be resumed (no event id, the
 * attempts used up, a resumption refused) would leave the call waiting for its timeout: the SDK
 * reports the end only to the sender. The call is answered at once with an error that says so
 * (classed as a lost connection: the server may have acted). An answer that did arrive came first,
 * and this one then matches no request.
 */
function answeringEveryRequest(transport: StreamableHTTPClientTransport): Transport {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (!isJSONRPCRequest(message)) return send(message, options);
    const { id } = message;
    return send(message, {
      ...options,
      onRequestStreamEnd: () => {
        queueMicrotask(() =>
          transport.onmessage?.({
            jsonrpc: "2.0",
            id,
            error: {
              code: STREAM_ENDED_CODE,
              message: "the server ended the response stream without an answer",
              data: STREAM_ENDED_DATA,
            },
          }),
        );
      },
    });
  };
  return transport;
}

/** Whether a call failed with the answer `answeringEveryRequest` gives a stream that ended unanswered. */
export function streamEndedUnanswered(error: unknown): boolean {
  return (
    error instanceof ProtocolError && error.code === STREAM_ENDED_CODE && error.data === STREAM_ENDED_DATA
  );
}

function bearerToken(
  definition: McpHttpDefinition,
  environment: Readonly<Record<string, string | undefined>>,
): string | undefined {
  const variable = definition.bearer_token_env;
  if (variable === undefined) return undefined;
  const value = environment[variable];
  if (value === undefined || value === "") throw new MissingTokenError(variable);
  return value;
}

/**
 * Whether a failed Streamable HTTP connect means "this server speaks the older SSE transport":
 * the spec's backwards-compatibility rule is a 4xx answer to the initialize POST.
 */
export function suggestsSseFallback(error: unknown): boolean {
  return error instanceof SdkHttpError && error.status >= 400 && error.status < 500 && error.status !== 401;
}

const LOST_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_SOCKET",
]);

/**
 * Whether an error the SDK reports out of band means the connection to a remote server is gone:
 * a response stream cut mid-way, a request that could not reach the server, the SSE stream lost.
 */
export function connectionLost(error: unknown): boolean {
  if (error instanceof SseError) return true;
  if (!(error instanceof Error)) return false;
  if (
    /^(SSE stream disconnected|Failed to reconnect SSE stream|Maximum reconnection attempts)/.test(
      error.message,
    )
  )
    return true;
  if (error instanceof TypeError && /^(fetch failed|terminated)$/.test(error.message)) return true;
  const cause = (error as { cause?: unknown }).cause;
  const code = typeof cause === "object" && cause !== null ? (cause as { code?: unknown }).code : undefined;
  return typeof code === "string" && LOST_CODES.has(code);
}

/**
 * Whether the SDK may resume the stream after reporting `error`: a stream cut or a failed
 * resumption, after which it schedules the next attempt at once when it can (a stream that carried
 * an event id, attempts left), and does nothing more when it cannot.
 */
export function mayResume(error: unknown): boolean {
  return (
    error instanceof Error && /^(SSE stream disconnected|Failed to reconnect SSE stream)/.test(error.message)
  );
}
