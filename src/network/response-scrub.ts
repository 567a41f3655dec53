import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { pipeline, Transform, type TransformCallback } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";

/**
 * What a credential-bound host answers is scrubbed before it reaches the sandbox: a host that
 * echoes request headers back (a debugging endpoint, an error page quoting the request) would
 * otherwise hand the real value to the very process it was kept from. Every form the value is
 * likely to be echoed in (as sent, URL-encoded, JSON-escaped) is replaced by the placeholder, in
 * headers and in the body, across chunk boundaries. A compressed body is decompressed first, so
 * gzip cannot hide the value; an encoding harness cannot decode is refused rather than passed.
 */

/** One value to hide and what stands in its place. */
export interface Replacement {
  value: string;
  placeholder: string;
}

/** The byte patterns to look for: each credential's value in the forms an echo is likely to use. */
export function patternsOf(replacements: readonly Replacement[]): { find: Buffer; put: Buffer }[] {
  const seen = new Set<string>();
  const out: { find: Buffer; put: Buffer }[] = [];
  for (const { value, placeholder } of replacements) {
    const forms = [value, encodeURIComponent(value), JSON.stringify(value).slice(1, -1)];
    for (const form of forms) {
      if (form.length === 0 || seen.has(form)) continue;
      seen.add(form);
      out.push({ find: Buffer.from(form, "utf8"), put: Buffer.from(placeholder, "utf8") });
    }
  }
  // At one position the longest form wins: a short form inside a longer one must not split it.
  return out.sort((a, b) => b.find.length - a.find.length);
}

/** A stream that replaces every pattern, holding back only what could be the start of one. */
export class ScrubStream extends Transform {
  private readonly patterns: { find: Buffer; put: Buffer }[];
  private readonly keep: number;
  private tail: Buffer = Buffer.alloc(0);

  constructor(patterns: { find: Buffer; put: Buffer }[]) {
    super();
    this.patterns = patterns;
    this.keep = Math.max(0, ...patterns.map((pattern) => pattern.find.length - 1));
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.scan(this.tail.length === 0 ? chunk : Buffer.concat([this.tail, chunk]), false);
    done();
  }

  override _flush(done: TransformCallback): void {
    this.scan(this.tail, true);
    done();
  }

  private scan(buffer: Buffer, final: boolean): void {
    // A match starting before `limit` ends inside `buffer`; one starting later may still be
    // completed by the next chunk, so that much is held back.
    const limit = final ? buffer.length : Math.max(0, buffer.length - this.keep);
    let position = 0;
    for (;;) {
      let start = -1;
      let found: { find: Buffer; put: Buffer } | undefined;
      for (const pattern of this.patterns) {
        const at = buffer.indexOf(pattern.find, position);
        if (at !== -1 && at < limit && (start === -1 || at < start)) {
          start = at;
          found = pattern;
        }
      }
      if (found === undefined) break;
      if (start > position) this.push(buffer.subarray(position, start));
      this.push(found.put);
      position = start + found.find.length;
    }
    const emitted = Math.max(position, limit);
    if (emitted > position) this.push(buffer.subarray(position, emitted));
    this.tail = Buffer.from(buffer.subarray(emitted));
  }
}

/** A header value with every pattern replaced. */
function scrubText(text: string, replacements: readonly Replacement[]): string {
  let out = text;
  for (const { find, put } of patternsOf(replacements))
    out = out.split(find.toString("utf8")).join(put.toString("utf8"));
  return out;
}

/**
 * The response headers as the sandbox may see them: values scrubbed, and, when the body will be
 * rewritten, the length and encoding headers dropped (the body is re-framed as chunked, decoded).
 */
export function scrubHeaders(
  headers: Readonly<Record<string, string | string[]>>,
  replacements: readonly Replacement[],
  bodyRewritten: boolean,
): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (bodyRewritten && (name === "content-length" || name === "content-encoding")) continue;
    out[name] = Array.isArray(value)
      ? value.map((item) => scrubText(item, replacements))
      : scrubText(value, replacements);
  }
  return out;
}

/** The decoders for the content codings a response may carry; undefined for one harness cannot read. */
export function decoderFor(headers: IncomingHttpHeaders): Transform[] | undefined {
  const coding = String(headers["content-encoding"] ?? "")
    .split(",")
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== "" && token !== "identity");
  const decoders: Transform[] = [];
  // Codings are listed in the order applied, so they are undone last first.
  for (const token of coding.reverse()) {
    if (token === "gzip" || token === "x-gzip") decoders.push(createGunzip());
    else if (token === "deflate") decoders.push(createInflate());
    else if (token === "br") decoders.push(createBrotliDecompress());
    else return undefined;
  }
  return decoders;
}

/**
 * Relay an upstream answer to the client: untouched when no credential is bound to the host,
 * otherwise decoded and scrubbed. Returns why it was refused (a coding that cannot be decoded:
 * answered 502 here), or undefined once relaying has begun.
 */
export function relayAnswer(
  method: string | undefined,
  upstream: IncomingMessage,
  response: ServerResponse,
  headers: Record<string, string | string[]>,
  replacements: readonly Replacement[],
): string | undefined {
  const status = upstream.statusCode ?? 502;
  if (replacements.length === 0) {
    response.writeHead(status, upstream.statusMessage, headers);
    upstream.pipe(response);
    upstream.on("error", () => response.destroy());
    return undefined;
  }
  const hasBody =
    method !== "HEAD" &&
    status >= 200 &&
    status !== 204 &&
    status !== 304 &&
    upstream.headers["content-length"] !== "0";
  const decoders = hasBody ? decoderFor(upstream.headers) : [];
  if (decoders === undefined) {
    const coding = JSON.stringify(String(upstream.headers["content-encoding"]).slice(0, 60));
    upstream.resume();
    const why = `the answer is encoded as ${coding}, which cannot be checked for credentials`;
    response.writeHead(502, { "content-type": "text/plain; charset=utf-8", connection: "close" });
    response.end(`${why}\n`);
    return why;
  }
  response.writeHead(status, upstream.statusMessage, scrubHeaders(headers, replacements, hasBody));
  const stages: readonly (NodeJS.ReadableStream | NodeJS.WritableStream)[] = hasBody
    ? [upstream, ...decoders, new ScrubStream(patternsOf(replacements)), response]
    : [upstream, response];
  // A body that cannot be decoded or forwarded ends the answer there, never passed on raw.
  pipeline(stages, (error) => {
    if (error) response.destroy();
  });
  return undefined;
}
