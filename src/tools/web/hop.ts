import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { isIP, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { connect as tlsConnect } from "node:tls";

/**
 * One request of a fetch, made through the call's egress proxy: a `CONNECT host:port` on the
 * proxy's UNIX socket (so the proxy decides the hop by the `net(...)` rules, resolves the name
 * itself, refuses internal addresses and journals the connection, exactly as for a shell call's
 * connection), then TLS over that tunnel for https, then one GET. No cookies are sent or kept;
 * no credentials are added (see `extraHeaders`).
 */

export interface HopRequest {
  /** The proxy's socket. */
  socketPath: string;
  url: URL;
  /** Most body bytes to read; more are not read and the body is marked cut. */
  maxBytes: number;
  signal: AbortSignal;
  /** How long the hop may take, connect to last byte. */
  timeoutMs: number;
  /**
   * Headers a credential binding adds for this host (the seam for the proxy's credential
   * substitution; nothing adds any today).
   */
  extraHeaders?: Record<string, string>;
}

export type HopOutcome =
  | { kind: "response"; status: number; headers: IncomingHttpHeaders; body: Uint8Array; cut: boolean }
  /** The proxy refused the connection: its status and one-line reason. */
  | { kind: "refused"; status: number; reason: string }
  /** Connecting, TLS or the request failed. */
  | { kind: "failed"; reason: string };

const REFUSAL_BYTES = 4096;

export async function fetchHop(hop: HopRequest): Promise<HopOutcome> {
  const { url } = hop;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = url.port !== "" ? Number(url.port) : url.protocol === "https:" ? 443 : 80;
  const authority = `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
  const sockets: Duplex[] = [];
  const timer = setTimeout(() => abortAll(), hop.timeoutMs);
  let aborted: string | undefined;
  function abortAll(reason = `no answer within ${hop.timeoutMs} ms`): void {
    aborted ??= reason;
    for (const socket of sockets) socket.destroy();
  }
  const onAbort = () => abortAll("cancelled");
  hop.signal.addEventListener("abort", onAbort, { once: true });
  try {
    const tunnel = await openTunnel(hop.socketPath, authority, sockets);
    if (tunnel.kind !== "open") return tunnel;
    let stream: Socket = tunnel.socket;
    if (url.protocol === "https:") {
      stream = await secure(tunnel.socket, host, sockets);
    }
    return await get(stream, url, hop);
  } catch (error) {
    return { kind: "failed", reason: aborted ?? (error instanceof Error ? error.message : String(error)) };
  } finally {
    clearTimeout(timer);
    hop.signal.removeEventListener("abort", onAbort);
    // The proxy reports the connection when its tunnel closes: end it now.
    for (const socket of sockets) socket.destroy();
  }
}

type Tunnel = { kind: "open"; socket: Socket } | Extract<HopOutcome, { kind: "refused" | "failed" }>;

function openTunnel(socketPath: string, authority: string, sockets: Duplex[]): Promise<Tunnel> {
  return new Promise<Tunnel>((resolve, reject) => {
    const connect = httpRequest({
      socketPath,
      method: "CONNECT",
      path: authority,
      headers: { host: authority },
    });
    connect.on("socket", (socket) => sockets.push(socket));
    connect.once("error", reject);
    connect.once("connect", (response, socket: Socket, head: Buffer) => {
      sockets.push(socket);
      if (response.statusCode === 200) {
        if (head.length > 0) socket.unshift(head);
        resolve({ kind: "open", socket });
        return;
      }
      // A refusal: the proxy's one-line reason is the body.
      const chunks: Buffer[] = [head];
      let size = head.length;
      const finish = () =>
        resolve({
          kind: "refused",
          status: response.statusCode ?? 502,
          reason: Buffer.concat(chunks).subarray(0, REFUSAL_BYTES).toString("utf8").trim(),
        });
      socket.on("data", (chunk: Buffer) => {
        if (size < REFUSAL_BYTES) chunks.push(chunk);
        size += chunk.length;
      });
      socket.once("end", finish);
      socket.once("close", finish);
      socket.once("error", finish);
    });
    connect.end();
  });
}

function secure(socket: Socket, host: string, sockets: Duplex[]): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    // Upstream certificates are checked against the system store and NODE_EXTRA_CA_CERTS.
    const secured = tlsConnect({
      socket,
      ...(isIP(host) === 0 ? { servername: host } : {}),
      ALPNProtocols: ["http/1.1"],
    });
    sockets.push(secured);
    secured.once("secureConnect", () => resolve(secured));
    secured.once("error", (error: NodeJS.ErrnoException) =>
      reject(new Error(`TLS with ${host} failed (${error.code ?? error.message})`)),
    );
  });
}

function get(stream: Socket, url: URL, hop: HopRequest): Promise<HopOutcome> {
  return new Promise<HopOutcome>((resolve, reject) => {
    const request = httpRequest({
      createConnection: () => stream,
      method: "GET",
      path: `${url.pathname}${url.search}`,
      headers: {
        host: url.host,
        "user-agent": "harness-web_fetch",
        accept: "text/html, application/json;q=0.9, text/plain;q=0.9, */*;q=0.5",
        // The bytes stored are the bytes received: no compression to undo.
        "accept-encoding": "identity",
        connection: "close",
        ...(hop.extraHeaders ?? {}),
      },
    });
    request.once("error", (error: NodeJS.ErrnoException) =>
      reject(new Error(`the request to ${url.host} failed (${error.code ?? error.message})`)),
    );
    request.once("response", (response) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let cut = false;
      const done = () =>
        resolve({
          kind: "response",
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: new Uint8Array(Buffer.concat(chunks)),
          cut,
        });
      response.on("data", (chunk: Buffer) => {
        if (cut) return;
        const room = hop.maxBytes - size;
        if (chunk.length > room) {
          chunks.push(chunk.subarray(0, room));
          size += room;
          cut = true;
          // Read no further: the rest is never downloaded.
          response.destroy();
          done();
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      response.once("end", done);
      response.once("error", (error) => (cut ? undefined : reject(error)));
      response.once("close", () => {
        if (!response.complete && !cut) reject(new Error(`${url.host} closed the connection mid-body`));
      });
    });
    request.end();
  });
}
