import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { HOP_BY_HOP } from "./hop-by-hop.js";
import { closeAfterFlush, connectRelay } from "./relay.js";

/**
 * Plain `http://` through the proxy for a host no credential is bound to, as cheaply as a CONNECT
 * tunnel: node's HTTP server has parsed and framed the client's request (its parser is strict:
 * a request with both Content-Length and Transfer-Encoding, a duplicate Content-Length, a bare CR
 * or LF in a header is a 400 before anything here runs), and this module writes that one request
 * upstream with a head of its own making (origin-form target, the checked host in Host,
 * `connection: close`, its own framing of the body), then relays the upstream's answer to the
 * client as raw bytes (relay.ts), unparsed and unchanged. Nothing re-parses or re-chunks the
 * answer, which is what made this path 4-6x slower than a direct download.
 *
 * One request per client connection: the answer is not parsed, so where it ends is known only
 * when the upstream closes (it was asked to), and the client connection is then closed too. A
 * request the client pipelined behind the first is never sent anywhere (not to the first's
 * upstream: the upload side carries only the parsed body of the first request); the client sees
 * the connection close and sends it again on a new one, where it is decided on its own host.
 * Keeping the client connection open would need the answer's framing checked, or an upstream
 * could append an answer the client would take for its next request to another host.
 */

/** What the proxy decided for this request (proxy.ts `admit`). */
export interface PlainTarget {
  host: string;
  port: number;
  /** The address the proxy resolved and checked: the only one connected to. */
  address: string;
  url: URL;
  rule?: string;
  began: number;
}

/** What one forwarded request amounted to, for its `net.connection` record. */
export interface PlainOutcome {
  decision: "allow" | "error";
  reason?: string;
  bytes_up: number;
  bytes_down: number;
}

export interface PlainForwardOptions {
  idleMs: number;
  /** Open upstream sockets: the proxy closes them when it closes. */
  upstreams: Set<Socket>;
}

/** Client connections whose answer is being relayed raw: nothing else may write to them. */
const relaying = new WeakSet<object>();

/** Whether `socket` carries a raw answer: a pipelined request or a parse error on it is left alone. */
export function isRelaying(socket: object | null | undefined): boolean {
  return socket != null && relaying.has(socket);
}

/**
 * Hop-by-hop headers (meaningful between the client and this proxy only), and those this module
 * writes itself: the target's Host, the body's framing, and `expect` (node's server has already
 * answered `100 Continue`).
 */
const NOT_FORWARDED = new Set([...HOP_BY_HOP, "host", "content-length", "expect"]);

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value may hold visible characters, spaces, tabs and obs-text; never CR, LF or NUL. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** An origin-form target after URL parsing: no space, no control character. */
const ORIGIN_FORM = /^\/[\x21-\x7e]*$/;

export type RequestHead =
  | { ok: true; head: Buffer; body: "none" | "length" | "chunked" }
  | { ok: false; reason: string };

/**
 * The head sent upstream for `request`, or why the request is refused. Everything is checked
 * again here, whatever the parser already refused: framing that is not exactly one of
 * Content-Length or `chunked`, a header name that is not a token, a value with CR, LF or NUL.
 */
export function requestHead(request: IncomingMessage, url: URL): RequestHead {
  const version = request.httpVersion;
  if (version !== "1.1" && version !== "1.0") return { ok: false, reason: "only HTTP/1.0 and 1.1" };
  const raw = request.rawHeaders;
  const lines: string[] = [];
  let lengths = 0;
  let codings = 0;
  let length = "";
  let coding = "";
  const connectionTokens = new Set<string>();
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    const value = raw[index + 1] as string;
    if (!TOKEN.test(name) || !FIELD_VALUE.test(value)) {
      return { ok: false, reason: "a header name or value the proxy will not forward" };
    }
    if (name === "content-length") {
      lengths++;
      length = value.trim();
    } else if (name === "transfer-encoding") {
      codings++;
      coding = value.trim().toLowerCase();
    } else if (name === "connection") {
      for (const token of value.split(",")) connectionTokens.add(token.trim().toLowerCase());
    }
  }
  // Exactly one way to find where the body ends, or none: anything else is how requests are smuggled.
  if (lengths > 0 && codings > 0)
    return { ok: false, reason: "both Content-Length and Transfer-Encoding: ambiguous framing" };
  if (lengths > 1) return { ok: false, reason: "more than one Content-Length" };
  if (lengths === 1 && !/^[0-9]{1,15}$/.test(length))
    return { ok: false, reason: "an invalid Content-Length" };
  if (codings > 1 || (codings === 1 && coding !== "chunked"))
    return { ok: false, reason: "a Transfer-Encoding other than chunked" };
  const target = `${url.pathname}${url.search}`;
  if (!ORIGIN_FORM.test(target)) return { ok: false, reason: "the URL's path is not valid" };
  if (!TOKEN.test(request.method ?? "")) return { ok: false, reason: "the method is not valid" };
  lines.push(`${request.method} ${target} HTTP/${version}`, `host: ${url.host}`);
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = (raw[index] as string).toLowerCase();
    if (NOT_FORWARDED.has(name) || connectionTokens.has(name)) continue;
    lines.push(`${raw[index]}: ${raw[index + 1]}`);
  }
  let body: "none" | "length" | "chunked" = "none";
  if (lengths === 1) {
    lines.push(`content-length: ${length}`);
    body = "length";
  } else if (codings === 1) {
    lines.push("transfer-encoding: chunked");
    body = "chunked";
  }
  // One request per upstream connection: its close is where the answer ends.
  lines.push("connection: close", "", "");
  // latin1: header bytes go out exactly as they came in (node reads them as latin1).
  return { ok: true, head: Buffer.from(lines.join("\r\n"), "latin1"), body };
}

/**
 * Forward `request` to `target` and relay the answer raw; resolves with the outcome once the
 * upstream is closed. `refuse` answers the client through node's response (only while no raw
 * byte has been written to it).
 */
export function forwardPlain(
  request: IncomingMessage,
  target: PlainTarget,
  head: Extract<RequestHead, { ok: true }>,
  options: PlainForwardOptions,
  refuse: (status: number, reason: string) => void,
): Promise<PlainOutcome> {
  const client = request.socket;
  relaying.add(client);
  return new Promise<PlainOutcome>((resolve) => {
    const { address, port } = target;
    let failure: string | undefined;
    let established = false;
    // Nothing is written to the client before the upstream's first byte: until then a failure
    // can still be answered with a 502.
    const upstream = connectRelay(address, port, client, { endClient: false });
    options.upstreams.add(upstream);
    const idle = () => {
      failure ??= "idle for too long";
      upstream.destroy();
      client.destroy();
    };
    upstream.setTimeout(options.idleMs, idle);
    client.setTimeout(options.idleMs, idle);
    upstream.on("error", (error: NodeJS.ErrnoException) => {
      failure ??= established
        ? `the connection to ${target.host}:${port} failed (${error.code ?? "error"})`
        : `connecting to ${target.host}:${port} failed (${error.code ?? "error"})`;
    });
    upstream.once("connect", () => {
      established = true;
      upstream.write(head.head);
      sendBody(request, upstream, head.body);
    });
    // The client gone (aborted, or reset): the upstream goes with it at once; its request is void.
    const abort = () => {
      if (!upstream.destroyed) {
        failure ??= "the client closed the connection";
        upstream.destroy();
      }
    };
    client.once("close", abort);
    request.once("aborted", abort);
    upstream.once("close", () => {
      options.upstreams.delete(upstream);
      client.off("close", abort);
      if (upstream.bytesRead === 0 && !client.destroyed) {
        // No answer at all: the client gets a 502 saying why, through node's response.
        relaying.delete(client);
        failure ??= `${target.host}:${port} closed the connection without answering`;
        refuse(502, failure);
      } else {
        // The answer's last bytes may still be queued for a slow client: delivered first.
        closeAfterFlush(client, false);
      }
      resolve({
        // Answered, even if the answer was cut short: what reached the client is what was allowed.
        decision: upstream.bytesRead > 0 ? "allow" : "error",
        ...(failure !== undefined ? { reason: failure } : {}),
        bytes_up: upstream.bytesWritten,
        bytes_down: upstream.bytesRead,
      });
    });
  });
}

/** The request's body, framed as the head says: as it came (a length), or chunked anew. */
function sendBody(request: IncomingMessage, upstream: Socket, body: "none" | "length" | "chunked"): void {
  if (body === "none") {
    request.resume();
    return;
  }
  if (body === "length") {
    // Not ended after the body: a half-closed request reads as an abort to some servers.
    request.pipe(upstream, { end: false });
    return;
  }
  request.on("data", (chunk: Buffer) => {
    if (chunk.length === 0) return;
    const more = upstream.write(`${chunk.length.toString(16)}\r\n`);
    upstream.write(chunk);
    if (!upstream.write("\r\n") || !more) {
      request.pause();
      upstream.once("drain", () => request.resume());
    }
  });
  request.once("end", () => upstream.write("0\r\n\r\n"));
}
