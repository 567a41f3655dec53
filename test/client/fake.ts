import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { PassThrough } from "node:stream";
import { encodeLine, LineDecoder } from "../../src/api/index.js";

/** A durable notification as the protocol shapes it: one journal record, its seq and hash. */
export function durable(session: string, seq: number, method: string, extra: Record<string, unknown> = {}) {
  const hash = seq.toString(16).padStart(64, "0");
  const prev = (seq - 1).toString(16).padStart(64, "0");
  const record = {
    seq,
    type: "session.record",
    time: "2026-01-01T00:00:00.000Z",
    data: { n: seq },
    prev,
    hash,
  };
  return { jsonrpc: "2.0", method, params: { session, seq, hash, record, ...extra } };
}

export function approvalNote(session: string, seq: number) {
  return durable(session, seq, "approval/requested", {
    approval_id: `${session}:${seq}`,
    call_id: `c${seq}`,
    tool: "write_file",
    effect: "write",
    arguments: { path: "a.txt" },
  });
}

/** A handler result that leaves the request unanswered. */
export const NO_ANSWER = Symbol("no answer");

export type Handler = (method: string, params: Record<string, unknown>) => unknown;

export const defaultHandler: Handler = (method) => {
  if (method === "initialize") {
    return {
      protocol_version: 1,
      server: { name: "harness", version: "0.0.0-fake" },
      identity: "default",
      capabilities: { compact: true, http: true },
    };
  }
  return {};
};

/** A tiny HTTP server speaking the protocol's HTTP side, with hooks to misbehave. */
export class FakeHttpServer {
  readonly server: Server;
  readonly requests: { method: string; params: Record<string, unknown> }[] = [];
  readonly eventRequests: { url: string; lastEventId: string | undefined }[] = [];
  /** Per session, the durable notifications in order; `events` replays them. */
  readonly notes = new Map<string, ReturnType<typeof durable>[]>();
  handler: Handler = defaultHandler;
  /** Drop the stream after this many events, on the first connection only. */
  dropAfter: number | undefined;
  /** Raw SSE text to send instead of the stored notes (malformed output). */
  rawEvents: string | undefined;
  /** Raw body to answer /rpc with (malformed output). */
  rawRpc: string | undefined;
  token = "secret";
  #live: ServerResponse[] = [];

  constructor() {
    this.server = createServer((req, res) => void this.#serve(req, res));
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const res of this.#live) res.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "unauthorized" } }));
      return;
    }
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname === "/rpc" && req.method === "POST") {
      let body = "";
      for await (const chunk of req) body += chunk;
      const request = JSON.parse(body) as { id: number; method: string; params: Record<string, unknown> };
      this.requests.push({ method: request.method, params: request.params });
      res.writeHead(200, { "content-type": "application/json" });
      if (this.rawRpc !== undefined) return void res.end(this.rawRpc);
      try {
        const result = this.handler(request.method, request.params);
        res.end(JSON.stringify({ jsonrpc: "2.0", id: request.id, result }));
      } catch (error) {
        const e = error as { code?: number; message: string; data?: unknown };
        res.end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: request.id,
            error: { code: e.code ?? -32603, message: e.message, data: e.data },
          }),
        );
      }
      return;
    }
    if (url.pathname === "/events") {
      const session = url.searchParams.get("session") ?? "";
      const lastEventId = req.headers["last-event-id"] as string | undefined;
      this.eventRequests.push({ url: url.search, lastEventId });
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      if (this.rawEvents !== undefined) {
        res.write(this.rawEvents);
        this.#live.push(res);
        return;
      }
      const after = lastEventId
        ? Number(lastEventId.split(":").at(-1))
        : Number(url.searchParams.get("from_seq") ?? 1) - 1;
      const notes = (this.notes.get(session) ?? []).filter((n) => n.params.seq > after);
      const limit = this.eventRequests.length === 1 ? this.dropAfter : undefined;
      let sent = 0;
      for (const note of notes) {
        const text = `id: ${session}:${note.params.seq}\ndata: ${JSON.stringify(note)}\n\n`;
        sent++;
        if (limit !== undefined && sent === limit) {
          // The stream drops mid-replay, once what was written has left.
          res.write(text, () => res.destroy());
          return;
        }
        res.write(text);
      }
      this.#live.push(res);
      return;
    }
    res.writeHead(404).end();
  }
}

/**
 * A protocol server on a pair of in-memory streams: `clientInput` is what the client reads,
 * `clientOutput` what it writes. `send` puts any text on the wire (garbage included).
 */
export class FakeStreamServer {
  readonly clientInput = new PassThrough();
  readonly clientOutput = new PassThrough();
  readonly requests: { id: number; method: string; params: Record<string, unknown> }[] = [];
  handler: Handler = defaultHandler;
  /** Called after a request is answered (e.g. to replay after session/subscribe). */
  after: ((method: string, params: Record<string, unknown>) => void) | undefined;
  #decoder = new LineDecoder();

  constructor() {
    this.clientOutput.on("data", (chunk: Buffer) => {
      for (const line of this.#decoder.push(chunk)) {
        if (!line.ok) continue;
        const request = line.value as { id: number; method: string; params: Record<string, unknown> };
        this.requests.push(request);
        let answer: unknown;
        try {
          const result = this.handler(request.method, request.params);
          answer = result === NO_ANSWER ? undefined : { jsonrpc: "2.0", id: request.id, result };
        } catch (error) {
          const e = error as { code?: number; message: string };
          answer = { jsonrpc: "2.0", id: request.id, error: { code: e.code ?? -32603, message: e.message } };
        }
        if (answer !== undefined) this.send(encodeLine(answer));
        this.after?.(request.method, request.params);
      }
    });
  }

  send(text: string): void {
    this.clientInput.write(text);
  }

  notify(note: unknown): void {
    this.send(encodeLine(note));
  }
}
