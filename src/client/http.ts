import { createParser } from "eventsource-parser";
import { ErrorCode, errorResponse, RpcError, response as responseSchema } from "../api/index.js";
import { createClient, type HarnessClient } from "./client.js";
import { connectionClosed, connectionFailed, protocolViolation, type Transport } from "./transport.js";

export interface HttpOptions {
  /** The server's base URL, as `harness serve --http` prints it, e.g. http://127.0.0.1:4567 */
  url: string;
  token: string;
  /** For tests and custom agents; default: the global fetch. */
  fetch?: typeof fetch;
}

/** How long to wait before reconnecting a dropped event stream, growing to the cap. */
const RECONNECT_MS = [50, 100, 250, 500, 1000, 2000];
/** Reconnects in a row without one event before the stream gives up. */
const MAX_FAILED_RECONNECTS = 20;

class HttpTransport implements Transport {
  #nextId = 1;
  readonly #base: URL;
  readonly #fetch: typeof fetch;
  readonly #closing = new AbortController();

  constructor(
    url: string,
    private readonly token: string,
    fetchImpl: typeof fetch | undefined,
  ) {
    this.#base = new URL(url.endsWith("/") ? url : `${url}/`);
    this.#fetch = fetchImpl ?? fetch;
  }

  async call(method: string, params: unknown): Promise<unknown> {
    const id = this.#nextId++;
    let res: Response;
    try {
      res = await this.#fetch(new URL("rpc", this.#base), {
        method: "POST",
        headers: { authorization: `Bearer ${this.token}`, "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
        signal: this.#closing.signal,
      });
    } catch (error) {
      if (this.#closing.signal.aborted) throw connectionClosed("the client closed the connection");
      throw connectionFailed(`could not reach ${this.#base.origin}: ${(error as Error).message}`);
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      if (res.status === 401)
        throw new RpcError(ErrorCode.Unauthorized, "unauthorized: the token was refused");
      throw protocolViolation(
        `the server answered ${method} with HTTP ${res.status} and a body that is not JSON`,
      );
    }
    const parsed = responseSchema.safeParse(body);
    if (!parsed.success)
      throw protocolViolation(`the server's answer to ${method} is not a JSON-RPC response`);
    const message = parsed.data;
    if ("error" in message) throw new RpcError(message.error.code, message.error.message, message.error.data);
    if (message.id !== id)
      throw protocolViolation(`the server answered ${method} with the id of another request`);
    return message.result;
  }

  /**
   * Follows GET /events. When the stream drops (not when the caller stops), it reconnects with
   * `Last-Event-ID` naming the last event seen, so the server replays exactly what was missed.
   */
  async events(
    session: string,
    fromSeq: number,
    signal: AbortSignal,
    push: (raw: unknown) => void,
  ): Promise<void> {
    const stop = AbortSignal.any([signal, this.#closing.signal]);
    let lastEventId: string | undefined;
    let failures = 0;
    while (!stop.aborted) {
      const url = new URL("events", this.#base);
      url.searchParams.set("session", session);
      const headers: Record<string, string> = {
        authorization: `Bearer ${this.token}`,
        accept: "text/event-stream",
      };
      if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
      else url.searchParams.set("from_seq", String(fromSeq));
      let received = false;
      try {
        const res = await this.#fetch(url, { headers, signal: stop });
        if (!res.ok || res.body === null) throw await httpError(res);
        const parser = createParser({
          onEvent: (event) => {
            received = true;
            if (event.id !== undefined && event.id !== "") lastEventId = event.id;
            let value: unknown;
            try {
              value = JSON.parse(event.data);
            } catch {
              push(protocolViolation("the server sent an event whose data is not JSON"));
              return;
            }
            push(value);
          },
        });
        const decoder = new TextDecoder();
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          parser.feed(decoder.decode(chunk, { stream: true }));
        }
      } catch (error) {
        if (stop.aborted) return;
        if (error instanceof RpcError) throw error;
      }
      if (stop.aborted) return;
      failures = received ? 0 : failures + 1;
      if (failures > MAX_FAILED_RECONNECTS) {
        throw connectionClosed(`the event stream of ${session} dropped ${failures} times in a row`);
      }
      await sleep(RECONNECT_MS[Math.min(failures, RECONNECT_MS.length - 1)] ?? 2000, stop);
    }
  }

  async close(): Promise<void> {
    this.#closing.abort();
  }
}

/** A refused GET /events: the JSON-RPC error in its body, or one made from the status. */
async function httpError(res: Response): Promise<RpcError> {
  const text = await res.text().catch(() => "");
  try {
    const parsed = errorResponse.safeParse(JSON.parse(text));
    if (parsed.success)
      return new RpcError(parsed.data.error.code, parsed.data.error.message, parsed.data.error.data);
  } catch {}
  if (res.status === 401) return new RpcError(ErrorCode.Unauthorized, "unauthorized: the token was refused");
  if (res.status === 404) return new RpcError(ErrorCode.NotFound, "not found");
  return protocolViolation(`the event stream answered HTTP ${res.status}`);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** Connects to `harness serve --http` and `initialize`s (a refused token fails here, -32001). */
export async function connectHttp(opts: HttpOptions): Promise<HarnessClient> {
  const client = createClient(new HttpTransport(opts.url, opts.token, opts.fetch));
  await client.initialize({ client: { name: "harness/client", version: "1" } });
  return client;
}
