import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { isIP } from "node:net";
import { ErrorCode, RpcError } from "../api/errors.js";
import { DEFAULT_STREAM_LIMITS, EventStreamWriter, type StreamLimits } from "./event-stream.js";
import { checkSessionId, type SessionHub } from "./hub.js";
import type { Identity, IdentityPolicy, TokenTable } from "./identities.js";
import { SERVER_PAGE_CSP, serverPage } from "./page.js";
import { answer, type Connection, decodeBody, errorLine, type ServerInfo } from "./rpc.js";
import { StreamSlots } from "./stream-slots.js";

/** The largest POST /rpc body taken. */
export const MAX_RPC_BODY_BYTES = 4 * 1024 * 1024;
const HEARTBEAT_MS = 15_000;
/** Open event streams one identity may hold: a flood of them cannot starve the others. */
export const MAX_STREAMS_PER_IDENTITY = 64;
/** A client must send its request's headers within this (slowloris). */
const HEADERS_TIMEOUT_MS = 10_000;

/** Only this machine may connect (unless --allow-remote). */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

export interface HttpOptions {
  host: string;
  port: number;
  allowRemote: boolean;
  tokens: TokenTable;
  policyOf(identity: string): IdentityPolicy;
  info: ServerInfo;
  log(line: string): void;
  /** How much an event stream may hold for a slow reader (DEFAULT_STREAM_LIMITS). */
  streamLimits?: StreamLimits;
}

export interface HttpServing {
  url: string;
  host: string;
  port: number;
  close(): Promise<void>;
}

/**
 * JSON-RPC over HTTP: POST /rpc (one request per body), GET /events (a session's notifications
 * as Server-Sent Events, `id: SESSION:SEQ`, Last-Event-ID replay), GET / (the viewer page).
 * Every route needs a bearer token (header, or ?token= for the page's EventSource); the Host
 * header must name the loopback address the server is bound to (no DNS rebinding).
 */
export async function serveHttp(hub: SessionHub, options: HttpOptions): Promise<HttpServing> {
  if (!options.allowRemote && !isLoopback(options.host))
    throw new Error(`${options.host} is not a loopback address: pass --allow-remote to listen on it`);
  const streams = new Set<ServerResponse>();
  let bound = { host: options.host, port: options.port };
  const slots = new StreamSlots(MAX_STREAMS_PER_IDENTITY);
  const server = createServer(
    { headersTimeout: HEADERS_TIMEOUT_MS, requestTimeout: 60_000, connectionsCheckingInterval: 1_000 },
    (req, res) => {
      void handle(req, res).catch((error: unknown) => {
        options.log(`http: ${error instanceof Error ? error.message : String(error)}`);
        if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
        res.end(errorLine(null, new RpcError(ErrorCode.InternalError, "internal error")));
      });
    },
  );

  function allowedHost(header: string | undefined): boolean {
    if (options.allowRemote) return true;
    if (header === undefined) return false;
    const port = String(bound.port);
    const names = new Set([`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]);
    names.add(isIP(bound.host) === 6 ? `[${bound.host}]:${port}` : `${bound.host}:${port}`);
    return names.has(header.toLowerCase());
  }

  /** A browser names the page's origin on cross-origin requests: only the server's own is taken. */
  function sameOrigin(req: IncomingMessage): boolean {
    const origin = req.headers.origin;
    if (origin === undefined) return true;
    try {
      return new URL(origin).host === (req.headers.host ?? "").toLowerCase();
    } catch {
      return false;
    }
  }

  function identify(req: IncomingMessage, url: URL): Identity | undefined {
    const header = req.headers.authorization;
    const bearer =
      typeof header === "string" && /^Bearer /i.test(header) ? header.slice(7).trim() : undefined;
    // ?token= only where a header cannot be set (the page's GET and its EventSource): a POST
    // from another origin can carry a query but never an Authorization header without a preflight.
    const query = req.method === "GET" ? url.searchParams.get("token") : null;
    const name = options.tokens.identify(bearer ?? query ?? undefined);
    return name === undefined ? undefined : { name, policy: options.policyOf(name) };
  }

  function json(res: ServerResponse, status: number, body: string): void {
    res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
    res.end(body);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!allowedHost(req.headers.host)) {
      json(
        res,
        421,
        errorLine(null, new RpcError(ErrorCode.Forbidden, "this Host is not the server's loopback address")),
      );
      return;
    }
    if (!sameOrigin(req)) {
      json(
        res,
        403,
        errorLine(
          null,
          new RpcError(ErrorCode.Forbidden, "a page of another origin may not call this server"),
        ),
      );
      return;
    }
    const url = new URL(req.url ?? "/", "http://server");
    const identity = identify(req, url);
    if (!identity) {
      res.setHeader("www-authenticate", 'Bearer realm="harness"');
      json(
        res,
        401,
        errorLine(
          null,
          new RpcError(ErrorCode.Unauthorized, "unauthorized: send Authorization: Bearer TOKEN"),
        ),
      );
      return;
    }
    if (url.pathname === "/rpc" && req.method === "POST") return rpc(req, res, identity);
    if (url.pathname === "/events" && req.method === "GET") return events(req, res, url, identity);
    if (url.pathname === "/" && req.method === "GET") {
      res.writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": SERVER_PAGE_CSP,
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store",
      });
      res.end(serverPage());
      return;
    }
    json(
      res,
      404,
      errorLine(null, new RpcError(ErrorCode.MethodNotFound, `no route ${req.method} ${url.pathname}`)),
    );
  }

  async function rpc(req: IncomingMessage, res: ServerResponse, identity: Identity): Promise<void> {
    const body = await readBody(req, MAX_RPC_BODY_BYTES);
    if (body === undefined) {
      // Answered as soon as the limit is passed; the rest is discarded unread (readBody).
      json(res, 413, errorLine(null, new RpcError(ErrorCode.InvalidRequest, "request body over 4 MiB")));
      return;
    }
    const connection: Connection = { identity, transport: "http", subscriptions: new Map() };
    const response = await answer(hub, connection, options.info, decodeBody(body));
    if (response === undefined) {
      res.writeHead(204);
      res.end();
      return;
    }
    json(res, 200, response);
  }

  async function events(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    identity: Identity,
  ): Promise<void> {
    const session = url.searchParams.get("session");
    if (!session) {
      json(res, 400, errorLine(null, new RpcError(ErrorCode.InvalidParams, "GET /events?session=ID")));
      return;
    }
    try {
      checkSessionId(session);
    } catch (error) {
      json(res, 400, errorLine(null, error as RpcError));
      return;
    }
    // Without Last-Event-ID or from_seq: the whole journal (seqs start at 0), then live.
    let fromSeq = 0;
    const lastId = req.headers["last-event-id"];
    const given = url.searchParams.get("from_seq");
    if (typeof lastId === "string" && lastId.startsWith(`${session}:`)) {
      const seq = Number(lastId.slice(session.length + 1));
      if (Number.isInteger(seq) && seq >= 0) fromSeq = seq + 1;
    } else if (given !== null) {
      const seq = Number(given);
      if (!Number.isInteger(seq) || seq < 0) {
        json(
          res,
          400,
          errorLine(null, new RpcError(ErrorCode.InvalidParams, "from_seq must be a whole number")),
        );
        return;
      }
      fromSeq = seq;
    }
    // The slot is taken before the subscription is awaited (concurrent opens cannot pass the cap)
    // and given back exactly once, when the connection closes, whenever that is: before the
    // subscription is set up, on an error, on a drop or at the end.
    const release = slots.take(identity.name);
    if (release === undefined) {
      json(
        res,
        429,
        errorLine(
          null,
          new RpcError(
            ErrorCode.Conflict,
            `at most ${MAX_STREAMS_PER_IDENTITY} open event streams per identity`,
          ),
        ),
      );
      return;
    }
    const writer = new EventStreamWriter(
      res,
      session,
      options.streamLimits ?? DEFAULT_STREAM_LIMITS,
      (reason) =>
        options.log(
          `http: dropped an event stream of session ${JSON.stringify(session)} (identity ${identity.name}): ${reason}`,
        ),
    );
    let unsubscribe: (() => void) | undefined;
    let closed = false;
    let heartbeat: NodeJS.Timeout | undefined;
    res.on("close", () => {
      closed = true;
      release();
      writer.close();
      clearInterval(heartbeat);
      streams.delete(res);
      unsubscribe?.();
    });
    let subscription: Awaited<ReturnType<SessionHub["stream"]>>;
    try {
      subscription = await hub.stream(identity, session, fromSeq, (notification, durable) =>
        writer.push(notification, durable),
      );
    } catch (error) {
      const rpcError =
        error instanceof RpcError ? error : new RpcError(ErrorCode.InternalError, "internal error");
      release();
      if (!closed) json(res, rpcError.code === ErrorCode.NotFound ? 404 : 400, errorLine(null, rpcError));
      return;
    }
    if (closed) {
      // The client left while the subscription was set up: nothing to keep.
      subscription.unsubscribe();
      return;
    }
    unsubscribe = subscription.unsubscribe;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    // The status goes now, not with the first event: a session with nothing journaled yet has none.
    res.flushHeaders();
    streams.add(res);
    writer.start(subscription.replay);
    heartbeat = setInterval(() => writer.ping(), HEARTBEAT_MS);
    heartbeat.unref();
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address && typeof address === "object") bound = { host: options.host, port: address.port };
  const shownHost = isIP(bound.host) === 6 ? `[${bound.host}]` : bound.host;
  return {
    url: `http://${shownHost}:${bound.port}`,
    host: bound.host,
    port: bound.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of streams) res.end();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The body as text, or undefined when it is over the limit. */
function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      resolve(undefined);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      // Over the limit: stop buffering and answer now (an endless body never gets an answer otherwise).
      req.off("data", onData);
      req.resume(); // flowing with no listener: the rest is dropped as it comes, never held
      resolve(undefined);
    };
    req.on("data", onData);
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
