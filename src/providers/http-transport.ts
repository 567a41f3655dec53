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
  /** The body as UTF-8 text, in arrival order. Throws when the connection is cut mid-body. */
  body: AsyncIterable<string>;
  /** Stop reading and close the connection. */
  close(): void;
}

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
        body: res,
        close: () => res.destroy(),
      });
    });
    // After the response arrived, failures surface through the body's iterator instead.
    req.on("error", reject);
    req.end(payload);
  });
}

/** Read a whole body as text, keeping at most `limit` characters (the rest is drained). */
export async function readText(response: HttpResponse, limit: number): Promise<string> {
  let text = "";
  for await (const chunk of response.body) {
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
