import { PROTOCOL_VERSION } from "../api/common.js";
import {
  type AnyRequest,
  errorResponseFor,
  parseErrorResponse,
  parseRequest,
  type RequestId,
  successResponseFor,
} from "../api/envelope.js";
import { ErrorCode, RpcError } from "../api/errors.js";
import { type DecodedLine, encodeLine } from "../api/framing.js";
import type { SessionHub, Sink } from "./hub.js";
import type { Identity } from "./identities.js";

/** One client connection: who it is, and (stdio) where its subscribed notifications go. */
export interface Connection {
  identity: Identity;
  transport: "stdio" | "http";
  /** Pushes notifications to this connection (stdio); absent over HTTP (GET /events instead). */
  sink?: Sink;
  readonly subscriptions: Map<string, () => void>;
}

export interface ServerInfo {
  version: string;
  http: boolean;
  /** Called once for `shutdown`, after its response is sent. */
  shutdown(): void;
}

/** An error response as one line (with its newline). */
export function errorLine(id: RequestId | null, error: RpcError): string {
  return encodeLine(errorResponseFor(id, error.toJSON()));
}

/** Answer one decoded line (stdio) or body (HTTP): the response line, or undefined for a notification. */
export async function answer(
  hub: SessionHub,
  connection: Connection,
  info: ServerInfo,
  line: DecodedLine,
): Promise<string | undefined> {
  if (!line.ok) {
    return line.error === "parse"
      ? encodeLine(parseErrorResponse())
      : errorLine(null, new RpcError(ErrorCode.InvalidRequest, `invalid request: ${line.message}`));
  }
  const parsed = parseRequest(line.value);
  // A client notification (no id) gets no answer, as JSON-RPC says; this protocol defines none.
  if (parsed.kind === "notification") return undefined;
  if (parsed.kind === "error") return encodeLine(parsed.response);
  const request = parsed.request;
  try {
    return encodeLine(successResponseFor(request.id, (await call(hub, connection, info, request)) as never));
  } catch (error) {
    return errorLine(request.id, asRpcError(error));
  }
}

/** A body as a decoded line (HTTP: one request per body). */
export function decodeBody(text: string): DecodedLine {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, error: "parse", message: "the body is not JSON" };
  }
}

function asRpcError(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : "internal error";
  // Errors harness names (a refused journal, a bad setup) say what to do; anything else is internal.
  if (typeof code === "string" && /^[A-Z_]+$/.test(code))
    return new RpcError(
      code === "SESSION_NOT_FOUND" ? ErrorCode.NotFound : ErrorCode.InvalidParams,
      message,
      {
        code,
      },
    );
  // Input the client gave that the setup refused (a bad option, a script that does not parse).
  if (error instanceof Error && (error.name === "UsageError" || error.name === "ScriptError"))
    return new RpcError(ErrorCode.InvalidParams, message);
  return new RpcError(ErrorCode.InternalError, `internal error: ${message}`);
}

async function call(
  hub: SessionHub,
  connection: Connection,
  info: ServerInfo,
  request: AnyRequest,
): Promise<unknown> {
  const identity = connection.identity;
  switch (request.method) {
    case "initialize":
      return {
        protocol_version: PROTOCOL_VERSION,
        server: { name: "harness", version: info.version },
        identity: identity.name,
        capabilities: { compact: true, http: info.http },
      };
    case "session/start": {
      // A stdio connection follows the sessions it starts (from their next record).
      const { unsubscribe, ...started } = await hub.start(identity, request.params, connection.sink);
      if (unsubscribe) {
        connection.subscriptions.get(started.session)?.();
        connection.subscriptions.set(started.session, unsubscribe);
      }
      return started;
    }
    case "session/list":
      return hub.list(identity, request.params);
    case "session/read":
      return hub.read(identity, request.params);
    case "session/verify":
      return hub.verify(identity, request.params);
    case "session/subscribe": {
      const { params } = request;
      if (!connection.sink)
        throw new RpcError(
          ErrorCode.InvalidRequest,
          "over HTTP, follow a session with GET /events?session=ID",
        );
      connection.subscriptions.get(params.session)?.();
      connection.subscriptions.set(
        params.session,
        await hub.subscribe(identity, params.session, params.from_seq, connection.sink),
      );
      return {};
    }
    case "session/unsubscribe":
      connection.subscriptions.get(request.params.session)?.();
      connection.subscriptions.delete(request.params.session);
      return {};
    case "turn/start":
      return hub.startTurn(identity, request.params);
    case "turn/steer":
      return hub.steer(identity, request.params);
    case "turn/interrupt":
      return hub.interrupt(identity, request.params);
    case "approval/list":
      return hub.approvals(identity, request.params.session);
    case "approval/respond":
      return hub.respond(identity, request.params.approval_id, request.params.decision);
    case "session/fork":
      return hub.fork(identity, request.params);
    case "session/compact":
      return hub.compact(identity, request.params);
    case "shutdown":
      // Over HTTP the server is shared: only an identity that sees every session may stop them all.
      if (connection.transport === "http" && identity.policy.see_all !== true)
        throw new RpcError(ErrorCode.Forbidden, "shutdown needs an identity with see_all", {
          code: "FORBIDDEN",
        });
      setImmediate(() => info.shutdown());
      return {};
  }
}
