import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createMcpHandler, isLegacyRequest, type Server } from "@modelcontextprotocol/server";
import { type RequestOrigins, refusal, requestOrigins } from "./http-guard.js";
import type { SessionLimits } from "./http-limits.js";
import { type ClientSession, type Exchange, HttpSessions, jsonRpcError } from "./http-sessions.js";

export { isLoopback } from "./http-guard.js";

/** Largest request body taken (a tool call's arguments are bounded far below it). */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface HttpServeOptions {
  host: string;
  port: number;
  /** The bearer token every request must carry (`Authorization: Bearer TOKEN`). */
  token: string;
  /** Host names (optionally NAME:PORT) accepted besides the bound address (and loopback names). */
  allowedHosts?: readonly string[];
  /** Browser origins accepted besides the server's own. */
  allowedOrigins?: readonly string[];
  /** A server for a request of the stateless protocol generation (or a 2025 one outside a session). */
  stateless: () => Server;
  /** A new 2025-era client session, made at its initialize. */
  session: () => ClientSession;
  limits: SessionLimits;
  onError?: (error: Error) => void;
}

export interface HttpServing {
  /** Where it listens (the port the OS chose when 0 was asked). */
  host: string;
  port: number;
  close(): Promise<void>;
}

/**
 * Streamable HTTP on node:http, in front of the SDK. Every request passes, before anything reads
 * its body: the `Host`/`Origin` check (403; DNS rebinding), then the bearer token (401; compared
 * in constant time, as digests so lengths do not leak either). Then a 2025-era client's
 * initialize opens a client session (Mcp-Session-Id) that its later requests are routed to, and
 * everything else goes to the SDK's handler for the stateless generation.
 */
export async function serveHttp(options: HttpServeOptions): Promise<HttpServing> {
  const onError = (error: Error) => options.onError?.(error);
  const handler = createMcpHandler(() => options.stateless(), { legacy: "stateless", onerror: onError });
  const sessions = new HttpSessions(options.session, options.limits, onError);
  const expected = digest(options.token);
  // Nothing is answered until the port is known: requests must name it.
  let origins: RequestOrigins = { hosts: new Set(), origins: new Set() };
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      onError(error instanceof Error ? error : new Error(String(error)));
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end("internal error\n");
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refused = refusal(req.headers.host, header(req, "origin"), origins);
    if (refused !== undefined) {
      req.resume();
      res.writeHead(403, { "content-type": "text/plain" });
      res.end(`forbidden: ${refused}\n`);
      return;
    }
    if (!authorized(req.headers.authorization, expected)) {
      req.resume();
      res.writeHead(401, { "content-type": "text/plain", "www-authenticate": 'Bearer realm="harness"' });
      res.end("a bearer token is required (Authorization: Bearer TOKEN)\n");
      return;
    }
    const body = await readBody(req);
    if (body === undefined) {
      res.writeHead(413, { "content-type": "text/plain" });
      res.end("request body too large\n");
      return;
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
    }
    const abort = new AbortController();
    res.on("close", () => abort.abort());
    const method = req.method ?? "GET";
    const request = new Request(`http://${req.headers.host ?? "localhost"}${req.url ?? "/"}`, {
      method,
      headers,
      signal: abort.signal,
      ...(method === "GET" || method === "HEAD" ? {} : { body }),
    });
    const exchange = await route(request, method, body, header(req, "mcp-session-id"));
    try {
      const { response } = exchange;
      res.writeHead(response.status, Object.fromEntries(response.headers));
      // An event stream's headers go out now, not with its first event: a client waits for them
      // before it treats the stream as open (an idle GET stream would wait for the keep-alive).
      if (response.body) res.flushHeaders();
      if (response.body) await pipeBody(response.body, res, abort.signal);
      res.end();
    } finally {
      exchange.done();
    }
  }

  /** Which server answers: the client's session, a new one (2025 initialize), or the stateless handler. */
  async function route(
    request: Request,
    method: string,
    body: Buffer,
    sessionId: string | undefined,
  ): Promise<Exchange> {
    if (sessionId !== undefined) {
      const exchange = await sessions.request(sessionId, request);
      return exchange ?? { response: jsonRpcError(404, "Session not found", -32001), done: () => undefined };
    }
    if (method === "POST" && isInitialize(body) && (await isLegacyRequest(request))) {
      return sessions.initialize(request);
    }
    return { response: await handler.fetch(request), done: () => undefined };
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  origins = requestOrigins(
    { host: options.host, port },
    {
      ...(options.allowedHosts ? { hosts: options.allowedHosts } : {}),
      ...(options.allowedOrigins ? { origins: options.allowedOrigins } : {}),
    },
  );
  return {
    host: options.host,
    port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await sessions.closeAll();
      await handler.close();
    },
  };
}

/**
 * Sends a response body until it ends or the client goes away. A client that goes away is
 * noticed at once, not when the stream next has something to send: the body is cancelled, so
 * an event stream that carries nothing for a while (an idle GET stream, a cancelled call's
 * stream) stops counting as the session's activity as soon as its client has left.
 */
async function pipeBody(
  body: ReadableStream<Uint8Array>,
  res: ServerResponse,
  gone: AbortSignal,
): Promise<void> {
  const reader = body.getReader();
  const cancel = () => void reader.cancel().catch(() => undefined);
  if (gone.aborted) cancel();
  else gone.addEventListener("abort", cancel, { once: true });
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || gone.aborted) return;
      res.write(value);
    }
  } finally {
    gone.removeEventListener("abort", cancel);
    if (gone.aborted) cancel();
  }
}

/** Whether a body is the initialize handshake (alone, or in a batch). */
function isInitialize(body: Buffer): boolean {
  let message: unknown;
  try {
    message = JSON.parse(body.toString("utf8"));
  } catch {
    return false;
  }
  const messages = Array.isArray(message) ? message : [message];
  return messages.some(
    (item) =>
      typeof item === "object" && item !== null && (item as { method?: unknown }).method === "initialize",
  );
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

function authorized(header: string | undefined, expected: Buffer): boolean {
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) return false;
  return timingSafeEqual(digest(match[1]), expected);
}

async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.byteLength;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}
