import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach } from "vitest";

const FIXTURES = fileURLToPath(new URL("../fixtures/", import.meta.url));

/** Bytes of a recorded fixture, exactly as stored. */
export function fixture(relative: string): Buffer {
  return readFileSync(`${FIXTURES}${relative}`);
}

/** Build an SSE body from JSON payloads (the scripted sequences are written like the recordings). */
export function sse(events: ReadonlyArray<{ event?: string; data: unknown } | string>): string {
  return events
    .map((item) => {
      if (typeof item === "string") return `${item}\n\n`;
      const data = typeof item.data === "string" ? item.data : JSON.stringify(item.data);
      return `${item.event === undefined ? "" : `event: ${item.event}\n`}data: ${data}\n\n`;
    })
    .join("");
}

export interface ScriptedReply {
  status?: number;
  headers?: Record<string, string>;
  /** Whole body; for SSE replies pass the stream text. */
  body?: string | Buffer;
  /** Write this prefix, flush it, then destroy the socket (a connection cut mid-stream). */
  cutAfter?: string | Buffer;
  /** Write this prefix and then send nothing more, keeping the connection open (a stalled server). */
  holdAfter?: string | Buffer;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  received: ReceivedRequest[];
  close(): Promise<void>;
}

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
};
export const JSON_HEADERS = { "content-type": "application/json" };

/** A loopback HTTP server answering each request with the next scripted reply (the last repeats). */
export async function startServer(replies: readonly ScriptedReply[]): Promise<TestServer> {
  const received: ReceivedRequest[] = [];
  let next = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      received.push({
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      const reply = replies[Math.min(next, replies.length - 1)];
      next += 1;
      if (reply === undefined) {
        res.writeHead(500).end();
        return;
      }
      res.writeHead(reply.status ?? 200, reply.headers ?? SSE_HEADERS);
      if (reply.cutAfter !== undefined) {
        res.write(reply.cutAfter, () => setTimeout(() => res.socket?.destroy(), 20));
        return;
      }
      if (reply.holdAfter !== undefined) {
        res.write(reply.holdAfter);
        return;
      }
      res.end(reply.body ?? "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A made-up key that must never appear in an error, an identity or anything written. */
export const CANARY = "sk-canary-DO-NOT-LEAK-1234";

/**
 * One server per test, closed after each test. `start` closes and replaces the current one; `current` is the
 * last started (for asserting what it received).
 */
export function serverPerTest(): {
  start(replies: readonly ScriptedReply[]): Promise<TestServer>;
  readonly current: TestServer;
} {
  let current: TestServer | undefined;
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return {
    async start(replies) {
      await current?.close();
      current = await startServer(replies);
      return current;
    },
    get current() {
      if (current === undefined) throw new Error("no server was started in this test");
      return current;
    },
  };
}
