import type { SessionHub, Sink } from "./hub.js";
import type { Identity } from "./identities.js";
import { isMethod, type MethodName, parseParams } from "./methods.js";
import {
  errorMessage,
  type Incoming,
  notificationMessage,
  parseMessage,
  RPC,
  RpcError,
  type RpcRequest,
  resultMessage,
} from "./wire.js";

export const PROTOCOL_VERSION = 1;

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

/** Answer one line (or HTTP body): the response text, or undefined for a notification. */
export async function answer(
  hub: SessionHub,
  connection: Connection,
  info: ServerInfo,
  text: string,
): Promise<string | undefined> {
  const incoming: Incoming = parseMessage(text);
  if (incoming.kind === "error") return errorMessage(incoming.id, incoming.error);
  const { request } = incoming;
  try {
    const result = await call(hub, connection, info, request);
    return request.id === undefined ? undefined : resultMessage(request.id, result);
  } catch (error) {
    if (request.id === undefined) return undefined;
    return errorMessage(request.id, asRpcError(error));
  }
}

function asRpcError(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : "internal error";
  // Errors harness names (a refused journal, a bad setup) say what to do; anything else is internal.
  if (typeof code === "string" && /^[A-Z_]+$/.test(code))
    return new RpcError(code === "SESSION_NOT_FOUND" ? RPC.NOT_FOUND : RPC.INVALID_PARAMS, message, { code });
  // Input the client gave that the setup refused (a bad option, a script that does not parse).
  if (error instanceof Error && (error.name === "UsageError" || error.name === "ScriptError"))
    return new RpcError(RPC.INVALID_PARAMS, message);
  return new RpcError(RPC.INTERNAL, `internal error: ${message}`);
}

async function call(
  hub: SessionHub,
  connection: Connection,
  info: ServerInfo,
  request: RpcRequest,
): Promise<unknown> {
  const method = request.method;
  if (!isMethod(method)) throw new RpcError(RPC.METHOD_NOT_FOUND, `method not found: ${method}`);
  const identity = connection.identity;
  const p = <M extends MethodName>(m: M) => parseParams(m, request.params);
  switch (method) {
    case "initialize":
      p("initialize");
      return {
        protocol_version: PROTOCOL_VERSION,
        server: { name: "harness", version: info.version },
        identity: identity.name,
        capabilities: { compact: true, http: info.http },
      };
    case "session/start": {
      const params = p("session/start");
      // A stdio connection follows the sessions it starts (from their next record).
      const { unsubscribe, ...started } = await hub.start(identity, params, connection.sink);
      if (unsubscribe) {
        connection.subscriptions.get(started.session)?.();
        connection.subscriptions.set(started.session, unsubscribe);
      }
      return started;
    }
    case "session/list":
      return hub.list(identity, p("session/list"));
    case "session/read":
      return hub.read(identity, p("session/read"));
    case "session/verify":
      return hub.verify(identity, p("session/verify"));
    case "session/subscribe": {
      const params = p("session/subscribe");
      if (!connection.sink)
        throw new RpcError(RPC.INVALID_REQUEST, "over HTTP, follow a session with GET /events?session=ID");
      connection.subscriptions.get(params.session)?.();
      connection.subscriptions.set(
        params.session,
        await hub.subscribe(identity, params.session, params.from_seq, connection.sink),
      );
      return {};
    }
    case "session/unsubscribe": {
      const params = p("session/unsubscribe");
      connection.subscriptions.get(params.session)?.();
      connection.subscriptions.delete(params.session);
      return {};
    }
    case "turn/start":
      return hub.startTurn(identity, p("turn/start"));
    case "turn/steer":
      return hub.steer(identity, p("turn/steer"));
    case "turn/interrupt":
      return hub.interrupt(identity, p("turn/interrupt"));
    case "approval/list":
      return hub.approvals(identity, p("approval/list").session);
    case "approval/respond": {
      const params = p("approval/respond");
      return hub.respond(identity, params.approval_id, params.decision);
    }
    case "session/fork":
      return hub.fork(identity, p("session/fork"));
    case "session/compact":
      return hub.compact(identity, p("session/compact"));
    case "shutdown":
      p("shutdown");
      setImmediate(() => info.shutdown());
      return {};
  }
}

/** A notification as one line. */
export { notificationMessage };
