import { lookup } from "node:dns/promises";
import { lstatSync, type Stats } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { isIP, type Server as NetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Duplex } from "node:stream";
import { isInternalAddress } from "./addresses.js";
import type { Credentials } from "./credentials.js";
import { HOP_BY_HOP } from "./hop-by-hop.js";
import { intercept } from "./intercept.js";
import { forwardPlain, isRelaying, requestHead } from "./plain-forward.js";
import { closeAfterFlush, connectRelay, joinRelay } from "./relay.js";
import { relayAnswer } from "./response-scrub.js";
import type { SessionAuthority } from "./session-ca.js";

/**
 * The host side of a call's network access: an HTTP proxy on a UNIX socket in a private 0700
 * directory, one per call, so every connection belongs to the call that made it. It takes
 * CONNECT tunnels and plain absolute-URI requests; for each it asks `decide`, resolves the name
 * itself, refuses internal addresses unless the deciding rule names the host exactly, connects to
 * the very address it checked (no second lookup, so no DNS rebinding) and reports the finished
 * connection to `record`. Hostile input gets a 400 or is dropped; it never reaches the host's
 * process as an exception.
 */

export interface EgressDecision {
  decision: "allow" | "deny";
  /** The deciding rule's text, when a rule decided. */
  rule?: string;
  /** Why, in one line (the 403 body when denied). */
  reason: string;
  /** Whether the deciding rule names this exact host: only then may internal addresses be reached. */
  exact: boolean;
}

/** One finished (or refused) connection, as the journal records it. */
export interface EgressConnection {
  host: string;
  port: number;
  /** `allow`; `deny` (by rule, or an address refused); `error` (allowed, but the upstream failed). */
  decision: "allow" | "deny" | "error";
  rule?: string;
  /** Why it was refused or failed. */
  reason?: string;
  /** The address connected to (allowed connections). */
  address?: string;
  bytes_up: number;
  bytes_down: number;
  ms: number;
}

export interface EgressLimits {
  /** Largest request head (request line and headers). Default 16 KiB. */
  maxHeaderBytes?: number;
  /** A connection with no traffic either way for this long is closed. Default 120 000 ms. */
  idleMs?: number;
  /** Concurrent client connections. Default 64. */
  maxConnections?: number;
  /** How long resolving a name may take. Default 10 000 ms. */
  lookupMs?: number;
}

/**
 * The session's credentials, for a proxy that substitutes them: TLS is terminated for the hosts
 * they are bound to (and only those), plain HTTP rewritten, placeholders replaced in headers.
 */
export interface EgressCredentials {
  credentials: Credentials;
  authority: SessionAuthority;
  /** What verifies a bound host's real certificate (PEM texts). */
  trust: readonly string[];
  /** The CA bundle the sandbox trusts (PEM): written as PROXY_CA_BUNDLE_NAME beside the socket. */
  bundle: string;
  /** A substitution was made on a request to `host`; must not throw. */
  used(name: string, host: string): void;
}

export interface EgressProxyOptions {
  /** Decide a connection (an `ask` is resolved by the caller); must not reject. */
  decide(host: string, port: number): Promise<EgressDecision>;
  /** Called once per connection when it ends; must not throw (errors are ignored). */
  record(connection: EgressConnection): void;
  limits?: EgressLimits;
  /** Where to make the private directory. Default the OS temporary directory. */
  parent?: string;
  /** Name resolution (tests give their own). Default dns.lookup with all addresses. */
  resolve?: (host: string) => Promise<string[]>;
  /** Credentials to substitute for their bound hosts; absent or empty: every tunnel is bytes only. */
  credentials?: EgressCredentials;
}

export interface EgressProxy {
  /** The private directory holding the socket (bound into the sandbox). */
  directory: string;
  /** The socket's host path. */
  socketPath: string;
  /**
   * Serve the connections of another listening socket too (a sandbox's, handed over by its
   * bridge: sandbox/egress-bridge.ts), exactly as those on the UNIX socket. It is closed with the
   * proxy; after close() it is closed at once.
   */
  adopt(listener: NetServer): void;
  /** Stop accepting, end every connection, remove the directory. Idempotent. */
  close(): Promise<void>;
}

export const PROXY_SOCKET_NAME = "proxy.sock";
/** The CA bundle (public certificates only) a sandboxed process trusts, beside the socket. */
export const PROXY_CA_BUNDLE_NAME = "ca-bundle.pem";

/** Start a proxy. Rejects when it cannot listen: the caller's network access then fails closed. */
export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const limits = {
    maxHeaderBytes: options.limits?.maxHeaderBytes ?? 16 * 1024,
    idleMs: options.limits?.idleMs ?? 120_000,
    maxConnections: options.limits?.maxConnections ?? 64,
    lookupMs: options.limits?.lookupMs ?? 10_000,
  };
  // mkdtemp makes the directory 0700: only this user can reach the socket.
  const directory = await mkdtemp(path.join(options.parent ?? tmpdir(), "harness-egress-"));
  const socketPath = path.join(directory, PROXY_SOCKET_NAME);
  const credentials = options.credentials;
  if (credentials !== undefined && credentials.credentials.bindings.length > 0) {
    try {
      await writeFile(path.join(directory, PROXY_CA_BUNDLE_NAME), credentials.bundle, { mode: 0o644 });
    } catch (error) {
      await rm(directory, { recursive: true, force: true });
      throw error;
    }
  }
  const resolve = options.resolve ?? resolveAll;
  const sockets = new Set<Duplex>();
  const server: Server = createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    requestTimeout: limits.idleMs,
    headersTimeout: Math.min(limits.idleMs, 60_000),
    keepAliveTimeout: 5_000,
  });
  server.maxConnections = limits.maxConnections;
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
  });
  // Malformed or oversized heads: a 400 (431 for headers too large) and the connection closed.
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A malformed request pipelined behind one whose answer is being relayed raw: that answer
    // is not interrupted; the connection closes after it.
    if (isRelaying(socket)) return;
    if (!socket.writable) return socket.destroy();
    const status =
      error.code === "HPE_HEADER_OVERFLOW" ? "431 Request Header Fields Too Large" : "400 Bad Request";
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
  });
  // Each connection until it is reported: close() waits for them, so every record is made before
  // the call that owns the proxy ends.
  const inFlight = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  };
  const context: Context = { options, limits, resolve, upstreams: new Set() };
  server.on("connect", (request: IncomingMessage, client: Duplex, head: Buffer) => {
    track(tunnel(context, request, client, head).catch(() => void client.destroy()));
  });
  // Requests on one client connection are handled one after the other: one pipelined behind a
  // request whose answer is relayed raw (plain-forward.ts) is never handled at all (the
  // connection closes after that answer), so nothing is ever written into the middle of it.
  const queues = new WeakMap<Duplex, Promise<void>>();
  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    // Done once its answer has been handed to the socket whole (or the socket closed): only then
    // may the next request's answer, possibly raw bytes, follow it.
    const answered = new Promise<void>((done) => {
      response.once("finish", done);
      response.once("close", done);
    });
    const work = (queues.get(socket) ?? Promise.resolve()).then(async () => {
      if (socket.destroyed || isRelaying(socket)) return;
      await forward(context, request, response).catch(() => void response.destroy());
      await answered;
    });
    queues.set(socket, work);
    track(work);
  });
  await new Promise<void>((resolveListen, rejectListen) => {
    server.once("error", rejectListen);
    server.listen(socketPath, () => {
      server.off("error", rejectListen);
      server.on("error", () => undefined);
      resolveListen();
    });
  }).catch(async (error: unknown) => {
    await rm(directory, { recursive: true, force: true });
    throw error;
  });
  let closed: Promise<void> | undefined;
  const adopted = new Set<NetServer>();
  const socketIdentity = lstatSync(socketPath);
  return {
    directory,
    socketPath,
    adopt: (listener) => {
      if (closed !== undefined) {
        listener.close();
        return;
      }
      adopted.add(listener);
      listener.maxConnections = limits.maxConnections;
      listener.on("error", () => undefined);
      // Node's HTTP server takes connections given to it this way as its own.
      listener.on("connection", (socket: Socket) => {
        // The socket on the host is this proxy as the call knows it: once it is gone or replaced
        // (a tmp cleaner, anything of this user), the proxy is gone for the call, as it would be
        // for a relaying bridge: later connections fail, none is served another way.
        if (!socketStillThere(socketPath, socketIdentity)) {
          socket.destroy();
          for (const each of adopted) each.close();
          return;
        }
        socket.setNoDelay(true);
        server.emit("connection", socket);
      });
    },
    close: () => {
      closed ??= (async () => {
        for (const listener of adopted) listener.close();
        await new Promise<void>((done) => {
          server.close(() => done());
          for (const socket of sockets) socket.destroy();
          for (const socket of context.upstreams) socket.destroy();
          server.closeAllConnections();
        });
        const settled = Promise.allSettled([...inFlight]);
        await Promise.race([settled, new Promise((done) => setTimeout(done, 2_000).unref())]);
        await rm(directory, { recursive: true, force: true });
      })();
      return closed;
    },
  };
}

interface Context {
  options: EgressProxyOptions;
  limits: Required<EgressLimits>;
  resolve: (host: string) => Promise<string[]>;
  /** Open tunnels' upstream sockets: closed with the proxy. */
  upstreams: Set<Socket>;
}

/** Whether the proxy's socket is still the one it made (same device and inode). */
function socketStillThere(socketPath: string, made: Stats): boolean {
  try {
    const now = lstatSync(socketPath);
    return now.isSocket() && now.ino === made.ino && now.dev === made.dev;
  } catch {
    return false;
  }
}

async function resolveAll(host: string): Promise<string[]> {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
}

/** A host and port from a CONNECT target (`host:port`, `[v6]:port`); undefined when malformed. */
export function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9._-]+)):([0-9]{1,5})$/.exec(authority);
  if (match === null) return undefined;
  const host = (match[1] ?? match[2] ?? "").toLowerCase().replace(/\.$/, "");
  const port = Number(match[3]);
  if (host === "" || !(port >= 1 && port <= 65535)) return undefined;
  if (match[1] !== undefined && isIP(host) !== 6) return undefined;
  return { host, port };
}

type Admission =
  | { ok: true; address: string; rule?: string }
  | { ok: false; status: number; reason: string; rule?: string; decision: "deny" | "error" };

/** A connection refused before anything was sent: recorded with the decision and why. */
function reportRefused(
  context: Context,
  host: string,
  port: number,
  admission: Extract<Admission, { ok: false }>,
  began: number,
): void {
  report(context, {
    host,
    port,
    decision: admission.decision,
    ...(admission.rule !== undefined ? { rule: admission.rule } : {}),
    reason: admission.reason,
    bytes_up: 0,
    bytes_down: 0,
    ms: Date.now() - began,
  });
}

/** The rule's decision, then the name resolved once and every address checked. */
async function admit(context: Context, host: string, port: number): Promise<Admission> {
  let verdict: EgressDecision;
  try {
    verdict = await context.options.decide(host, port);
  } catch {
    verdict = { decision: "deny", reason: "the decision failed", exact: false };
  }
  const rule = verdict.rule !== undefined ? { rule: verdict.rule } : {};
  if (verdict.decision !== "allow")
    return { ok: false, status: 403, reason: verdict.reason, decision: "deny", ...rule };
  let addresses: string[];
  try {
    addresses = isIP(host) !== 0 ? [host] : await withTimeout(context.resolve(host), context.limits.lookupMs);
  } catch {
    return { ok: false, status: 502, reason: `${host} could not be resolved`, decision: "error", ...rule };
  }
  if (addresses.length === 0) {
    return { ok: false, status: 502, reason: `${host} could not be resolved`, decision: "error", ...rule };
  }
  // Every address must pass: a name with one public and one internal address is not a way in.
  const internal = addresses.find((address) => isInternalAddress(address));
  if (internal !== undefined && !verdict.exact) {
    return {
      ok: false,
      status: 403,
      reason: `${host} resolves to ${internal}, a loopback, private or link-local address: only a rule naming ${host} exactly may reach it`,
      decision: "deny",
      ...rule,
    };
  }
  return { ok: true, address: addresses[0] as string, ...rule };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("timeout")), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

function refuse(client: Duplex, status: number, reason: string): void {
  const text = STATUS_TEXT[status] ?? "Error";
  const body = `${reason.replace(/[\r\n]+/g, " ")}\n`;
  client.end(
    `HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

const STATUS_TEXT: Record<number, string> = { 400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway" };

function report(context: Context, connection: EgressConnection): void {
  try {
    context.options.record(connection);
  } catch {
    // Recording is the caller's business; a failure there must not take the proxy down.
  }
}

/** CONNECT host:port: a tunnel of bytes once the destination is admitted. */
async function tunnel(
  context: Context,
  request: IncomingMessage,
  client: Duplex,
  head: Buffer,
): Promise<void> {
  const began = Date.now();
  client.on("error", () => undefined);
  const target = parseAuthority(request.url ?? "");
  if (target === undefined) return refuse(client, 400, "CONNECT needs HOST:PORT");
  const { host, port } = target;
  const admission = await admit(context, host, port);
  if (!admission.ok) {
    reportRefused(context, host, port, admission, began);
    return refuse(client, admission.status, admission.reason);
  }
  const address = admission.address;
  const credentials = context.options.credentials;
  if (credentials !== undefined && credentials.credentials.boundTo(host).length > 0) {
    return interceptTunnel(context, credentials, client, head, { host, port, address, began, admission });
  }
  const upstream = connectRelay(address, port, client);
  let established = false;
  let failure: string | undefined;
  const idle = () => {
    failure ??= "idle for too long";
    upstream.destroy();
    client.destroy();
  };
  upstream.setTimeout(context.limits.idleMs, idle);
  (client as Socket).setTimeout?.(context.limits.idleMs, idle);
  upstream.on("error", (error: NodeJS.ErrnoException) => {
    if (!established)
      failure = `connecting to ${formatAddress(address)}:${port} failed (${error.code ?? "error"})`;
  });
  upstream.once("connect", () => {
    established = true;
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length > 0) upstream.write(head);
    // Counted by the sockets themselves (bytesRead/bytesWritten): no code runs per chunk.
    joinRelay(client, upstream);
  });
  // A client gone takes its upstream with it: at once before the tunnel opened, else once what
  // the client sent has been written.
  client.once("close", (hadError: boolean) =>
    established ? closeAfterFlush(upstream, hadError) : upstream.destroy(),
  );
  context.upstreams.add(upstream);
  // `close` follows every end of the upstream, an error included: the one place a tunnel is reported.
  let reported: () => void = () => undefined;
  const done = new Promise<void>((resolveDone) => {
    reported = resolveDone;
  });
  upstream.once("close", (hadError: boolean) => {
    context.upstreams.delete(upstream);
    // The upstream's last bytes may still be queued for a slow client: they are delivered first.
    if (established) closeAfterFlush(client, hadError);
    else refuse(client, 502, failure ?? `connecting to ${host}:${port} failed`);
    report(context, {
      host,
      port,
      decision: established ? "allow" : "error",
      ...(admission.rule !== undefined ? { rule: admission.rule } : {}),
      ...(failure !== undefined ? { reason: failure } : {}),
      address,
      bytes_up: established ? upstream.bytesWritten : 0,
      bytes_down: established ? upstream.bytesRead : 0,
      ms: Date.now() - began,
    });
    reported();
  });
  await done;
}

/**
 * A tunnel to a host a credential is bound to: TLS terminated with the session CA and each
 * request's placeholders replaced (intercept.ts). One `net.connection` for the tunnel.
 */
async function interceptTunnel(
  context: Context,
  credentials: EgressCredentials,
  client: Duplex,
  head: Buffer,
  target: { host: string; port: number; address: string; began: number; admission: { rule?: string } },
): Promise<void> {
  const { host, port, address, began, admission } = target;
  client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
  const outcome = await intercept(client, head, {
    host,
    port,
    address,
    credentials: credentials.credentials,
    authority: credentials.authority,
    trust: credentials.trust,
    used: (name) => {
      try {
        credentials.used(name, host);
      } catch {
        // The caller's business, as with record.
      }
    },
    maxHeaderBytes: context.limits.maxHeaderBytes,
    idleMs: context.limits.idleMs,
  });
  const decision = outcome.refused
    ? "deny"
    : outcome.failure !== undefined && !outcome.reached
      ? "error"
      : "allow";
  report(context, {
    host,
    port,
    decision,
    ...(admission.rule !== undefined ? { rule: admission.rule } : {}),
    ...(outcome.failure !== undefined ? { reason: outcome.failure } : {}),
    address,
    bytes_up: outcome.bytes_up,
    bytes_down: outcome.bytes_down,
    ms: Date.now() - began,
  });
}

function formatAddress(address: string): string {
  return isIP(address) === 6 ? `[${address}]` : address;
}

/**
 * A plain request with an absolute URI (`GET http://host/path`): forwarded on a fresh connection,
 * its answer relayed raw (plain-forward.ts), or, for a host a credential is bound to, through
 * node's HTTP client so the placeholder can be substituted and the answer scrubbed.
 */
async function forward(context: Context, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const began = Date.now();
  const client = response.socket;
  const send = (status: number, reason: string): void => {
    if (response.headersSent) {
      response.destroy();
      return;
    }
    const body = `${reason.replace(/[\r\n]+/g, " ")}\n`;
    response.writeHead(status, { "content-type": "text/plain; charset=utf-8", connection: "close" });
    response.end(body);
  };
  let url: URL;
  try {
    url = new URL(request.url ?? "");
  } catch {
    return send(400, "a proxy request needs an absolute http:// URL");
  }
  if (url.protocol !== "http:" || !(request.url ?? "").startsWith("http://")) {
    return send(400, "a proxy request needs an absolute http:// URL (https goes through CONNECT)");
  }
  const target = parseAuthority(`${url.hostname}:${url.port === "" ? "80" : url.port}`);
  if (target === undefined) return send(400, "the URL's host is not valid");
  const { host, port } = target;
  // Framing and headers checked before anything is decided: a request that could be read two
  // ways (smuggling) or would inject a header is malformed, like any other (400, not recorded).
  const head = requestHead(request, url);
  if (!head.ok) {
    request.resume();
    return send(400, head.reason);
  }
  const admission = await admit(context, host, port);
  if (!admission.ok) {
    reportRefused(context, host, port, admission, began);
    request.resume();
    return send(admission.status, admission.reason);
  }
  const address = admission.address;
  const credentials = context.options.credentials;
  const bound = credentials !== undefined && credentials.credentials.boundTo(host).length > 0;
  if (!bound) {
    // No credential for this host: its answer needs no scrubbing, so it is relayed raw.
    const outcome = await forwardPlain(
      request,
      { host, port, address, url, began, ...(admission.rule !== undefined ? { rule: admission.rule } : {}) },
      head,
      { idleMs: context.limits.idleMs, upstreams: context.upstreams },
      send,
    );
    report(context, {
      host,
      port,
      ...outcome,
      ...(admission.rule !== undefined ? { rule: admission.rule } : {}),
      address,
      ms: Date.now() - began,
    });
    return;
  }
  const headers: Record<string, string | string[]> = {};
  const connectionTokens = new Set(
    String(request.headers.connection ?? "")
      .split(",")
      .map((token) => token.trim().toLowerCase()),
  );
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || connectionTokens.has(name)) continue;
    headers[name] = value;
  }
  // A host a credential is bound to: its placeholders in the headers become the real value.
  let outgoingHeaders = headers;
  if (credentials !== undefined) {
    const substituted = credentials.credentials.substitute(host, headers);
    // Only codings the scrubber can undo are offered, so no answer hides the value from it.
    outgoingHeaders = { ...substituted.headers, "accept-encoding": "gzip, deflate, br" };
    for (const name of substituted.used) {
      try {
        credentials.used(name, host);
      } catch {
        // The caller's business, as with record.
      }
    }
  }
  await new Promise<void>((done) => {
    let upstreamSocket: Socket | undefined;
    let failure: string | undefined;
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      report(context, {
        host,
        port,
        decision: failure === undefined ? "allow" : "error",
        ...(admission.rule !== undefined ? { rule: admission.rule } : {}),
        ...(failure !== undefined ? { reason: failure } : {}),
        address,
        bytes_up: upstreamSocket?.bytesWritten ?? 0,
        bytes_down: upstreamSocket?.bytesRead ?? 0,
        ms: Date.now() - began,
      });
      done();
    };
    const outgoing = httpRequest({
      // The address checked above, never the name again: no second lookup, no rebinding.
      host: address,
      port,
      method: request.method,
      path: `${url.pathname}${url.search}`,
      headers: { ...outgoingHeaders, host: url.host },
      agent: false,
      timeout: context.limits.idleMs,
    });
    outgoing.on("socket", (socket: Socket) => {
      upstreamSocket = socket;
      socket.once("close", settle);
    });
    outgoing.on("timeout", () => {
      failure = "the upstream went idle";
      outgoing.destroy();
    });
    outgoing.on("error", (error: NodeJS.ErrnoException) => {
      failure ??= `the request to ${host}:${port} failed (${error.code ?? "error"})`;
      send(502, failure);
      settle();
    });
    outgoing.on("response", (upstream) => {
      const out: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(upstream.headers)) {
        if (value === undefined || HOP_BY_HOP.has(name)) continue;
        out[name] = value;
      }
      const replacements =
        credentials?.credentials.boundTo(host).map(({ value, placeholder }) => ({ value, placeholder })) ??
        [];
      const refused = relayAnswer(request.method, upstream, response, out, replacements);
      if (refused !== undefined) failure ??= refused;
    });
    client?.once("close", () => outgoing.destroy());
    request.pipe(outgoing);
  });
}
