import { request as httpRequest, type IncomingHttpHeaders, type RequestOptions } from "node:http";

/**
 * One HTTP POST over node:http / node:https, for providers that read the wire themselves.
 *
 * Not `fetch`: on Node 20 the first use of fetch, `Headers` or `Response` loads undici, which
 * costs tens of milliseconds and about 10 MiB in a process that lives for one task. node:https
 * is only loaded for https endpoints.
 */

export interface HttpResponse {
  status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Readonly<Record<string, string>>;
  /**
   * The body as UTF-8 text, in arrival order. Throws when the connection is cut mid-body.
   * Leaving a loop over it early does not close the connection: call `close` or `release`.
   */
  body: AsyncIterable<string>;
  /** Stop reading and close the connection (the request failed or was abandoned). */
  close(): void;
  /**
   * Reading is done and the reply was complete: let the connection be reused for the next
   * request. What is left of the body (usually nothing) is drained for a moment, then the
   * connection is closed if the server is still sending.
   */
  release(): void;
}

/** How long a released response may take to finish before its connection is closed. */
const RELEASE_GRACE_MS = 1000;

export interface PostOptions {
  headers: Readonly<Record<string, string>>;
  body: string;
  signal: AbortSignal;
}

/** Send the request and resolve once the response headers arrived. */
export async function post(url: URL, options: PostOptions): Promise<HttpResponse> {
  const send = url.protocol === "https:" ? (await import("node:https")).request : httpRequest;
  const payload = Buffer.from(options.body, "utf8");
  const requestOptions: RequestOptions = {
    method: "POST",
    headers: { ...options.headers, "content-length": String(payload.byteLength) },
    signal: options.signal,
  };
  return new Promise<HttpResponse>((resolve, reject) => {
    const req = send(url, requestOptions, (res) => {
      res.setEncoding("utf8");
      resolve({
        status: res.statusCode ?? 0,
        headers: flattenHeaders(res.headers),
        body: res.iterator({ destroyOnReturn: false }),
        close: () => res.destroy(),
        release: () => {
          if (res.complete || res.destroyed) return;
          const giveUp = setTimeout(() => res.destroy(), RELEASE_GRACE_MS);
          giveUp.unref();
          res.once("close", () => clearTimeout(giveUp));
          res.resume();
        },
      });
    });
    // After the response arrived, failures surface through the body's iterator instead.
    req.on("error", reject);
    req.end(payload);
  });
}

/**
 * Read a whole body as text, keeping at most `limit` characters (the rest is drained).
 * `onChunk` is called for each chunk, e.g. to show an idle timer that the server is alive.
 */
export async function readText(
  response: HttpResponse,
  limit: number,
  onChunk: () => void = () => undefined,
): Promise<string> {
  let text = "";
  for await (const chunk of response.body) {
    onChunk();
    if (text.length < limit) text += chunk.slice(0, limit - text.length);
  }
  return text;
}

function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    flat[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return flat;
}
