import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { Agent, request as httpsRequest } from "node:https";
import { isIP, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { createSecureContext, type SecureContext, TLSSocket } from "node:tls";
import type { Credentials } from "./credentials.js";
import { HOP_BY_HOP } from "./hop-by-hop.js";
import { relayAnswer } from "./response-scrub.js";
import type { SessionAuthority } from "./session-ca.js";

/**
 * TLS terminated for a host credentials are bound to, so the placeholder can be replaced: the
 * client's CONNECT tunnel is answered with a certificate of the session CA for the CONNECT host,
 * each HTTP/1.1 request read from it (node's parser: split and pipelined requests included),
 * checked to be for that same host, its headers substituted, and sent over a TLS connection of
 * our own to the real host, verified against the system's and harness's trusted CAs. A client
 * hello naming another server, or a request naming another host, is refused: what reaches the
 * real value is only ever the host the rules admitted and the credential is bound to. What the
 * host answers is scrubbed of the real values bound to it (response-scrub.ts), so a host that
 * echoes the request back cannot hand the value to the process it was kept from.
 */

export interface InterceptOptions {
  /** The CONNECT host (normalized) and port: what was decided and what the credential is bound to. */
  host: string;
  port: number;
  /** The address the proxy checked: the only one connected to (no second lookup). */
  address: string;
  credentials: Credentials;
  authority: SessionAuthority;
  /** What verifies the real host's certificate (PEM texts). */
  trust: readonly string[];
  /** A substitution was made (for the journal). Must not throw. */
  used(name: string): void;
  /** Largest request head; a connection idle this long is closed. */
  maxHeaderBytes: number;
  idleMs: number;
}

/** What an intercepted tunnel amounted to, for its `net.connection` record. */
export interface InterceptOutcome {
  bytes_up: number;
  bytes_down: number;
  /** Why it was refused or failed, when it was. */
  failure?: string;
  /** Whether any request reached the real host. */
  reached: boolean;
  /** Whether the client was refused (a server name or Host for another host). */
  refused: boolean;
}

/**
 * Serve the tunnel `client` (the CONNECT already answered; `head` is what the client sent after
 * it) until either side ends it. Resolves once everything is closed; never rejects.
 */
export function intercept(
  client: Duplex,
  head: Buffer,
  options: InterceptOptions,
): Promise<InterceptOutcome> {
  return new Promise<InterceptOutcome>((resolveOutcome) => {
    const { host, port } = options;
    const upstreamSockets = new Set<Socket>();
    let failure: string | undefined;
    let reached = false;
    let refused = false;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let context: SecureContext;
    try {
      const leaf = options.authority.leafFor(host);
      context = createSecureContext({ key: leaf.key, cert: leaf.cert });
    } catch {
      client.destroy();
      resolveOutcome({
        bytes_up: 0,
        bytes_down: 0,
        failure: "no certificate could be made",
        reached,
        refused,
      });
      return;
    }
    if (head.length > 0) (client as Socket).unshift(head);
    const tls = new TLSSocket(client as Socket, {
      isServer: true,
      secureContext: context,
      ALPNProtocols: ["http/1.1"],
      // Called only when the client names a server: it must be the host it asked CONNECT for.
      SNICallback: (servername, done) => {
        if (normalizeName(servername) === host) return done(null, context);
        failure = `the TLS server name ${JSON.stringify(servername.slice(0, 253))} is not the CONNECT host ${host}`;
        refused = true;
        done(new Error(failure));
      },
    });
    tls.on("error", (error: NodeJS.ErrnoException) => {
      failure ??= `TLS with the client failed (${error.code ?? "error"})`;
      tls.destroy();
    });
    tls.setTimeout(options.idleMs, () => {
      failure ??= "idle for too long";
      tls.destroy();
    });
    const server: Server = createServer({
      maxHeaderSize: options.maxHeaderBytes,
      keepAliveTimeout: options.idleMs,
    });
    server.on("clientError", (_error, socket: Duplex) => {
      failure ??= "a malformed request";
      if (socket.writable)
        socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
      else socket.destroy();
    });
    // A protocol switch (a WebSocket) would carry bytes the proxy no longer reads: refused.
    server.on("upgrade", (_request, socket: Duplex) => {
      socket.end("HTTP/1.1 501 Not Implemented\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
    });
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      const refusal = misdirected(request, host, port);
      if (refusal !== undefined) {
        failure ??= refusal;
        refused = true;
        request.resume();
        return reply(response, 421, refusal);
      }
      const { headers, used } = options.credentials.substitute(host, forwardable(request.headers));
      // Only codings the scrubber can undo are offered, so no answer hides the value from it.
      headers["accept-encoding"] = "gzip, deflate, br";
      // Journaled as the real value is about to leave, whether or not the host then answers.
      for (const name of used) options.used(name);
      const outgoing = httpsRequest({
        host,
        port,
        // The address the proxy checked, never the name again: no second lookup, no rebinding.
        lookup: (_name, lookupOptions, callback) => {
          const family = isIP(options.address);
          if ((lookupOptions as { all?: boolean }).all === true) {
            (callback as (error: null, addresses: { address: string; family: number }[]) => void)(null, [
              { address: options.address, family },
            ]);
          } else callback(null, options.address, family);
        },
        ...(isIP(host) === 0 ? { servername: host } : {}),
        ca: [...options.trust],
        method: request.method,
        path: request.url,
        headers: { ...headers, host: request.headers.host ?? formatHost(host, port) },
        agent,
        timeout: options.idleMs,
      });
      outgoing.on("socket", (socket: Socket) => {
        upstreamSockets.add(socket);
      });
      outgoing.on("timeout", () => outgoing.destroy(new Error("the upstream went idle")));
      outgoing.on("error", (error: NodeJS.ErrnoException) => {
        const why = `the request to ${host}:${port} failed (${error.code ?? error.message})`;
        failure ??= why;
        if (!response.headersSent) reply(response, 502, why);
        else response.destroy();
      });
      outgoing.on("response", (upstream) => {
        reached = true;
        const out: Record<string, string | string[]> = {};
        for (const [name, value] of Object.entries(upstream.headers)) {
          if (value === undefined || HOP_BY_HOP.has(name)) continue;
          out[name] = value;
        }
        const replacements = options.credentials
          .boundTo(host)
          .map(({ value, placeholder }) => ({ value, placeholder }));
        const refused = relayAnswer(request.method, upstream, response, out, replacements);
        if (refused !== undefined) failure ??= `${host}:${port}: ${refused}`;
      });
      response.on("close", () => {
        if (!response.writableFinished) outgoing.destroy();
      });
      request.pipe(outgoing);
    });
    tls.once("close", () => {
      agent.destroy();
      server.close();
      let up = 0;
      let down = 0;
      for (const socket of upstreamSockets) {
        up += socket.bytesWritten;
        down += socket.bytesRead;
      }
      resolveOutcome({
        bytes_up: up,
        bytes_down: down,
        reached,
        refused,
        ...(failure !== undefined ? { failure } : {}),
      });
    });
    client.once("close", () => tls.destroy());
    server.emit("connection", tls);
  });
}

/**
 * Why a request is not for the tunnel's host, or undefined when it is: an origin-form target
 * and a Host header naming the CONNECT host and port (the port may be left out for 443).
 */
function misdirected(request: IncomingMessage, host: string, port: number): string | undefined {
  if (!(request.url ?? "").startsWith("/"))
    return "a request inside a tunnel needs an origin-form target (/path)";
  const given = request.headers.host;
  if (given === undefined) return "the request has no Host header";
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+))(?::([0-9]{1,5}))?$/.exec(given);
  if (match === null) return "the request's Host header is not valid";
  const name = normalizeName(match[1] ?? match[2] ?? "");
  const givenPort = match[3] === undefined ? 443 : Number(match[3]);
  if (name !== host || givenPort !== port)
    return `the request is for ${given.slice(0, 260)}, not the CONNECT host ${formatHost(host, port)}`;
  return undefined;
}

function normalizeName(name: string): string {
  return name.toLowerCase().replace(/\.$/, "");
}

function formatHost(host: string, port: number): string {
  const name = isIP(host) === 6 ? `[${host}]` : host;
  return port === 443 ? name : `${name}:${port}`;
}

function forwardable(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const connectionTokens = new Set(
    String(headers.connection ?? "")
      .split(",")
      .map((token) => token.trim().toLowerCase()),
  );
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || connectionTokens.has(name) || name === "host")
      continue;
    out[name] = value;
  }
  return out;
}

function reply(response: ServerResponse, status: number, reason: string): void {
  const body = `${reason.replace(/[\r\n]+/g, " ")}\n`;
  response.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close" });
  response.end(body);
}
