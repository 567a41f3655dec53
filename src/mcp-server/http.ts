import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { isIP } from "node:net";
import { createMcpHandler, type Server } from "@modelcontextprotocol/server";

/** Largest request body taken (a tool call's arguments are bounded far below it). */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export interface HttpServeOptions {
  host: string;
  port: number;
  /** The bearer token every request must carry (`Authorization: Bearer TOKEN`). */
  token: string;
  factory: () => Server;
  onError?: (error: Error) => void;
}

export interface HttpServing {
  /** Where it listens (the port the OS chose when 0 was asked). */
  host: string;
  port: number;
  close(): Promise<void>;
}

/** Loopback addresses and `localhost`: reachable only from this machine. */
export function isLoopback(host: string): boolean {
  if (host === "localhost") return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

/**
 * Streamable HTTP on node:http, in front of the SDK's fetch-style handler. Every request is
 * refused with 401 before the handler sees it unless it carries the bearer token (compared in
 * constant time, as digests so lengths do not leak either).
 */
export async function serveHttp(options: HttpServeOptions): Promise<HttpServing> {
  const handler = createMcpHandler(options.factory, {
    legacy: "stateless",
    ...(options.onError ? { onerror: options.onError } : {}),
  });
  const expected = digest(options.token);
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      options.onError?.(error instanceof Error ? error : new Error(String(error)));
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end("internal error\n");
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!authorized(req.headers.authorization, expected)) {
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
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const chunk of response.body) {
        if (abort.signal.aborted) break;
        res.write(chunk);
      }
    }
    res.end();
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
  return {
    host: options.host,
    port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await handler.close();
    },
  };
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
