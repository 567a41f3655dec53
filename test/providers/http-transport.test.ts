import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type HttpResponse, post, readText } from "../../src/providers/http-transport.js";

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  socket: Socket;
}

type Handler = (req: Received, res: ServerResponse) => void;

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of open.splice(0)) await close();
});

/** A loopback server calling `handler` once each request's body was read. */
async function serve(handler: Handler): Promise<{ url: URL; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const entry = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks),
        socket: req.socket,
      };
      received.push(entry);
      handler(entry, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  open.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/v1/chat?x=1`), received };
}

/** A counter the server side can wait on (for lock-step exchanges without timers). */
function progress() {
  let value = 0;
  let waiters: Array<() => void> = [];
  return {
    set(next: number) {
      value = next;
      for (const wake of waiters) wake();
      waiters = [];
    },
    async atLeast(target: number) {
      while (value < target) await new Promise<void>((resolve) => waiters.push(resolve));
    },
  };
}

function send(url: URL, body = "", signal = new AbortController().signal): Promise<HttpResponse> {
  return post(url, { headers: { "content-type": "application/json", "x-test": "yes" }, body, signal });
}

async function chunksOf(response: HttpResponse): Promise<string[]> {
  const chunks: string[] = [];
  for await (const chunk of response.body) chunks.push(chunk);
  return chunks;
}

describe("http-transport: post", () => {
  it("sends the body with its byte length and reports status and flattened lower-case headers", async () => {
    const { url, received } = await serve((_req, res) => {
      res.writeHead(418, {
        "Content-Type": "text/plain; charset=utf-8",
        "X-Request-ID": "req_1",
        "Set-Cookie": ["a=1", "b=2"],
        "X-Repeated": ["one", "two"],
      });
      res.end("short and stout");
    });
    const body = JSON.stringify({ text: "héllo 世界 🎉" });
    const response = await send(url, body);
    expect(response.status).toBe(418);
    expect(response.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(response.headers["x-request-id"]).toBe("req_1");
    expect(response.headers["set-cookie"]).toBe("a=1, b=2");
    expect(response.headers["x-repeated"]).toBe("one, two");
    expect(Object.keys(response.headers).every((name) => name === name.toLowerCase())).toBe(true);
    expect(Object.values(response.headers).every((value) => typeof value === "string")).toBe(true);
    expect((await chunksOf(response)).join("")).toBe("short and stout");

    const [request] = received;
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe("/v1/chat?x=1");
    expect(request?.headers["x-test"]).toBe("yes");
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(request?.body.toString("utf8")).toBe(body);
    expect(request?.headers["content-length"]).toBe(String(Buffer.byteLength(body, "utf8")));
    expect(Buffer.byteLength(body, "utf8")).toBeGreaterThan(body.length);
  });

  it("decodes UTF-8 split mid-character across separate reads", async () => {
    const b = (text: string) => Buffer.from(text, "utf8");
    const [e, shi, kai, party] = [b("é"), b("世"), b("界"), b("🎉")];
    // Every piece ends inside a character and completes at least one, so each read yields text.
    const pieces = [
      Buffer.concat([b("a"), e.subarray(0, 1)]),
      Buffer.concat([e.subarray(1), b("b"), shi.subarray(0, 2)]),
      Buffer.concat([shi.subarray(2), kai.subarray(0, 1)]),
      Buffer.concat([kai.subarray(1), party.subarray(0, 2)]),
      Buffer.concat([party.subarray(2), b("z")]),
    ];
    const chunks: string[] = [];
    const seen = progress();
    const { url } = await serve(async (_req, res) => {
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
      for (const [k, piece] of pieces.entries()) {
        // The next piece is written only after the client read the previous one: separate reads.
        await seen.atLeast(k);
        res.write(piece);
      }
      res.end();
    });
    const response = await send(url);
    for await (const chunk of response.body) {
      chunks.push(chunk);
      seen.set(chunks.length);
    }
    expect(chunks.length).toBeGreaterThanOrEqual(pieces.length);
    expect(chunks.join("")).toBe("aéb世界🎉z");
    expect(chunks.some((chunk) => chunk.includes("\uFFFD"))).toBe(false);
  });

  it("a connection destroyed mid-body makes reading the body throw ECONNRESET", async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: partial\n\n", () => setTimeout(() => res.socket?.destroy(), 20));
    });
    const response = await send(url);
    expect(response.status).toBe(200);
    const seen: string[] = [];
    const reading = (async () => {
      for await (const chunk of response.body) seen.push(chunk);
    })();
    await expect(reading).rejects.toMatchObject({ code: "ECONNRESET" });
    expect(seen.join("")).toBe("data: partial\n\n");
  });

  it("close() ends a body that is still streaming and closes the connection", async () => {
    let closed: () => void = () => undefined;
    const serverSawClose = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const { url } = await serve((_req, res) => {
      res.on("close", () => closed());
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: one\n\n");
    });
    const response = await send(url);
    const iterator = response.body[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: "data: one\n\n" });
    response.close();
    await expect(iterator.next()).rejects.toMatchObject({ code: "ERR_STREAM_PREMATURE_CLOSE" });
    await serverSawClose;
  });

  it("aborting the signal before the response arrives rejects post with an AbortError", async () => {
    let arrived: () => void = () => undefined;
    const requestArrived = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const { url, received } = await serve(() => arrived());
    const controller = new AbortController();
    const pending = send(url, "{}", controller.signal);
    await requestArrived;
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    expect(received).toHaveLength(1);
  });

  it("an already aborted signal rejects without reaching the server", async () => {
    const { url, received } = await serve((_req, res) => res.end("no"));
    const controller = new AbortController();
    controller.abort();
    await expect(send(url, "{}", controller.signal)).rejects.toMatchObject({ name: "AbortError" });
    expect(received).toEqual([]);
  });

  it("a closed port rejects with ECONNREFUSED", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await expect(send(new URL(`http://127.0.0.1:${port}/`))).rejects.toMatchObject({
      code: "ECONNREFUSED",
    });
  });
});

describe("http-transport: readText", () => {
  function fakeResponse(parts: readonly string[]) {
    const state = { pulled: 0, finished: false };
    async function* body(): AsyncGenerator<string> {
      for (const part of parts) {
        state.pulled += 1;
        yield part;
      }
      state.finished = true;
    }
    const response: HttpResponse = {
      status: 500,
      headers: {},
      body: body(),
      close: () => undefined,
      release: () => undefined,
    };
    return { response, state };
  }

  it("keeps at most `limit` characters and still drains every chunk", async () => {
    const parts = ["abcdef", "ghij", "klmnop", "qrstuvwxyz"];
    const { response, state } = fakeResponse(parts);
    expect(await readText(response, 8)).toBe("abcdefgh");
    expect(state).toEqual({ pulled: parts.length, finished: true });
  });

  it("returns the whole text when it fits, and an empty string for an empty body", async () => {
    expect(await readText(fakeResponse(["ab", "", "cd"]).response, 4)).toBe("abcd");
    expect(await readText(fakeResponse(["ab", "cd"]).response, 100)).toBe("abcd");
    expect(await readText(fakeResponse([]).response, 100)).toBe("");
    const zero = fakeResponse(["abc", "def"]);
    expect(await readText(zero.response, 0)).toBe("");
    expect(zero.state.finished).toBe(true);
  });

  it("limits a real body by characters and reads it to its end", async () => {
    const { url } = await serve(async (_req, res) => {
      res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
      for (let i = 0; i < 50; i += 1) {
        await new Promise<void>((resolve) => res.write("世".repeat(4000), () => resolve()));
      }
      res.end("END");
    });
    const response = await send(url);
    expect(response.status).toBe(500);
    const text = await readText(response, 1500);
    expect(text).toBe("世".repeat(1500));
    // Read to its end: nothing is left for another reader.
    expect(await response.body[Symbol.asyncIterator]().next()).toEqual({ done: true, value: undefined });
  });

  it("release() after a complete body keeps the connection for the next request", async () => {
    const sockets = new Set<unknown>();
    const { url } = await serve((req, res) => {
      sockets.add(req.socket);
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("done");
    });
    for (let i = 0; i < 3; i += 1) {
      const response = await send(url);
      expect(await readText(response, 100)).toBe("done");
      response.release();
    }
    expect(sockets.size).toBe(1);
  });

  it("release() in the middle of a body drains it, then closes a connection that keeps sending", async () => {
    let closed = false;
    const { url } = await serve((req, res) => {
      req.socket.on("close", () => {
        closed = true;
      });
      res.writeHead(200, { "content-type": "text/plain" });
      res.write("first");
      // Never ends: a server that keeps the stream open after the reply's end marker.
    });
    const response = await send(url);
    for await (const chunk of response.body) {
      expect(chunk).toBe("first");
      break;
    }
    response.release();
    await expect.poll(() => closed, { timeout: 5000 }).toBe(true);
  });
});
