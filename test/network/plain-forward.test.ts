import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { type AddressInfo, connect, createServer as createTcpServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { requestHead } from "../../src/network/plain-forward.js";
import { type EgressConnection, type EgressDecision, startEgressProxy } from "../../src/network/proxy.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface RawUpstream {
  port: number;
  /** Every byte received, per connection, in the order connections came. */
  received: Buffer[];
  /** Connections that have closed. */
  closed: number;
}

/**
 * A loopback TCP server that records every byte it receives and, once a request head has
 * arrived, calls `answer` (which writes whatever it likes and may end the socket).
 */
async function rawUpstream(answer: (socket: Socket, head: string) => void): Promise<RawUpstream> {
  const state: RawUpstream = { port: 0, received: [], closed: 0 };
  const server = createTcpServer((socket) => {
    const index = state.received.push(Buffer.alloc(0)) - 1;
    let answered = false;
    socket.on("data", (chunk: Buffer) => {
      state.received[index] = Buffer.concat([state.received[index] as Buffer, chunk]);
      const text = (state.received[index] as Buffer).toString("latin1");
      if (!answered && text.includes("\r\n\r\n")) {
        answered = true;
        answer(socket, text.slice(0, text.indexOf("\r\n\r\n")));
      }
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      state.closed++;
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
  state.port = (server.address() as AddressInfo).port;
  return state;
}

/** A node HTTP server that answers each request with what it read as its body (an echo). */
async function echoServer(): Promise<{ port: number; bodies: string[] }> {
  const bodies: string[] = [];
  const server: Server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString();
      bodies.push(body);
      response.end(`got ${body}`);
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
  return { port: (server.address() as AddressInfo).port, bodies };
}

async function proxyWith(decide: (host: string, port: number) => EgressDecision) {
  const records: EgressConnection[] = [];
  const asked: string[] = [];
  const proxy = await startEgressProxy({
    decide: async (host, port) => {
      asked.push(`${host}:${port}`);
      return decide(host, port);
    },
    record: (connection) => records.push(connection),
    // Every name a test uses is this machine: only the rules tell the hosts apart.
    resolve: async () => ["127.0.0.1"],
    limits: { idleMs: 5_000 },
  });
  cleanups.push(() => proxy.close());
  return { proxy, records, asked };
}

const allowLoopback = (host: string): EgressDecision =>
  host === "127.0.0.1" || host === "allowed.test"
    ? { decision: "allow", rule: `net(${host})`, reason: "allowed", exact: true }
    : { decision: "deny", reason: `no rule allows ${host}`, exact: false };

/** Send bytes over the proxy's socket; resolve with everything it answered once it closes. */
function exchange(
  socketPath: string,
  bytes: string | Buffer,
  onData?: (socket: Socket, received: number) => void,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    const chunks: Buffer[] = [];
    let received = 0;
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
      onData?.(socket, received);
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(Buffer.concat(chunks)));
    socket.write(bytes);
  });
}

async function settled(records: EgressConnection[], count: number): Promise<void> {
  for (let i = 0; i < 300 && records.length < count; i++) await new Promise((r) => setTimeout(r, 10));
}

describe("plain http:// through the proxy, relayed raw", () => {
  it("delivers an 8 MB answer byte for byte, and counts exactly what crossed each way", async () => {
    const body = randomBytes(8 * 1024 * 1024);
    const answerHead = `HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`;
    const server = await rawUpstream((socket) => {
      socket.write(answerHead);
      socket.end(body);
    });
    const { proxy, records } = await proxyWith(allowLoopback);
    const answer = await exchange(
      proxy.socketPath,
      `GET http://127.0.0.1:${server.port}/big?x=1 HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nUser-Agent: t/1\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n`,
    );
    // The answer is the upstream's bytes, unchanged: head and body.
    expect(answer.length).toBe(answerHead.length + body.length);
    expect(answer.subarray(0, answerHead.length).toString("latin1")).toBe(answerHead);
    expect(answer.subarray(answerHead.length).equals(body)).toBe(true);
    // The upstream got one request, origin-form, with the checked host and connection: close.
    const seen = (server.received[0] as Buffer).toString("latin1");
    expect(seen).toBe(
      `GET /big?x=1 HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\nUser-Agent: t/1\r\nAccept: */*\r\nconnection: close\r\n\r\n`,
    );
    await settled(records, 1);
    expect(records).toEqual([
      expect.objectContaining({
        host: "127.0.0.1",
        port: server.port,
        decision: "allow",
        rule: "net(127.0.0.1)",
        address: "127.0.0.1",
        bytes_up: seen.length,
        bytes_down: answer.length,
      }),
    ]);
  });

  it("a request pipelined behind another, to a denied host, never reaches any upstream", async () => {
    const first = await rawUpstream((socket) =>
      socket.end("HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nfirst"),
    );
    const second = await rawUpstream((socket) =>
      socket.end("HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nsecond"),
    );
    const { proxy, records, asked } = await proxyWith(allowLoopback);
    const answer = await exchange(
      proxy.socketPath,
      `GET http://127.0.0.1:${first.port}/one HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n` +
        `GET http://denied.test:${second.port}/two HTTP/1.1\r\nhost: denied.test\r\n\r\n` +
        `GET http://127.0.0.1:${first.port}/three HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`,
    );
    // The first answer, then the connection closed: nothing else was answered or sent.
    expect(answer.toString()).toBe("HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nfirst");
    expect(first.received.map((bytes) => bytes.toString().split("\r\n")[0])).toEqual(["GET /one HTTP/1.1"]);
    expect(first.received[0]!.toString()).not.toContain("two");
    expect(first.received[0]!.toString()).not.toContain("three");
    expect(second.received).toEqual([]);
    await settled(records, 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(asked).toEqual([`127.0.0.1:${first.port}`]);
    expect(records).toHaveLength(1);
  });

  it("a pipelined request to an allowed host is decided again on a new connection, on its own host", async () => {
    const first = await rawUpstream((socket) =>
      socket.end("HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nfirst"),
    );
    const second = await rawUpstream((socket) =>
      socket.end("HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nsecond"),
    );
    const { proxy, asked } = await proxyWith(allowLoopback);
    const one = await exchange(
      proxy.socketPath,
      `GET http://127.0.0.1:${first.port}/one HTTP/1.1\r\nhost: x\r\n\r\nGET http://allowed.test:${second.port}/two HTTP/1.1\r\nhost: x\r\n\r\n`,
    );
    expect(one.toString().endsWith("first")).toBe(true);
    expect(second.received).toEqual([]);
    // What a client does when the connection closes under its pipelined request: send it again.
    const two = await exchange(
      proxy.socketPath,
      `GET http://allowed.test:${second.port}/two HTTP/1.1\r\nhost: x\r\n\r\n`,
    );
    expect(two.toString().endsWith("second")).toBe(true);
    expect(second.received.map((bytes) => bytes.toString().split("\r\n")[0])).toEqual(["GET /two HTTP/1.1"]);
    expect(asked).toEqual([`127.0.0.1:${first.port}`, `allowed.test:${second.port}`]);
  });

  it("refuses requests that could be framed two ways or inject a header: nothing reaches the upstream", async () => {
    const server = await rawUpstream((socket) =>
      socket.end("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"),
    );
    const { proxy, records, asked } = await proxyWith(allowLoopback);
    const target = `http://127.0.0.1:${server.port}`;
    const smuggled = `GET ${target}/smuggled HTTP/1.1\r\nhost: x\r\n\r\n`;
    const attempts = [
      // CL.TE and TE.CL: both framings at once.
      `POST ${target}/a HTTP/1.1\r\nhost: x\r\ncontent-length: 6\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`,
      `POST ${target}/a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n1\r\nA\r\n0\r\n\r\n`,
      // Two lengths that disagree.
      `POST ${target}/a HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\ncontent-length: 44\r\n\r\n${smuggled}`,
      // A coding the proxy cannot frame, an obfuscated one, a coding list ending elsewhere.
      `POST ${target}/a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: gzip\r\n\r\nxxxx`,
      `POST ${target}/a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: xchunked\r\n\r\n0\r\n\r\n`,
      `POST ${target}/a HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked, identity\r\n\r\n0\r\n\r\n`,
      // CR or LF inside a header, a folded header, a space before the colon.
      `GET ${target}/a HTTP/1.1\r\nhost: x\r\nx-a: one\rx-b: two\r\n\r\n`,
      `GET ${target}/a HTTP/1.1\r\nhost: x\r\nx-a: one\nx-b: two\r\n\r\n`,
      `GET ${target}/a HTTP/1.1\r\nhost: x\r\nx-a: one\r\n two\r\n\r\n`,
      `GET ${target}/a HTTP/1.1\r\nhost: x\r\ncontent-length : 5\r\n\r\nhello`,
      // A negative or non-numeric length.
      `POST ${target}/a HTTP/1.1\r\nhost: x\r\ncontent-length: -1\r\n\r\n`,
      `POST ${target}/a HTTP/1.1\r\nhost: x\r\ncontent-length: 1e3\r\n\r\n`,
    ];
    for (const attempt of attempts) {
      const answer = (await exchange(proxy.socketPath, attempt)).toString();
      expect(answer, attempt).toMatch(/^HTTP\/1.1 400 /);
    }
    expect(server.received).toEqual([]);
    expect(asked).toEqual([]);
    expect(records).toEqual([]);
  });

  it("the head it writes is checked again, whatever the parser let through", () => {
    const url = new URL("http://a.test/p");
    const fake = (rawHeaders: string[], method = "POST", httpVersion = "1.1") =>
      requestHead({ rawHeaders, method, httpVersion } as unknown as IncomingMessage, url);
    expect(fake(["content-length", "1", "transfer-encoding", "chunked"])).toMatchObject({ ok: false });
    expect(fake(["content-length", "1", "content-length", "1"])).toMatchObject({ ok: false });
    expect(fake(["transfer-encoding", "chunked", "transfer-encoding", "chunked"])).toMatchObject({
      ok: false,
    });
    expect(fake(["x-a", "one\r\nx-injected: yes"])).toMatchObject({ ok: false });
    expect(fake(["x-a\r\nx-b", "one"])).toMatchObject({ ok: false });
    expect(fake(["x-a", "nul\u0000"])).toMatchObject({ ok: false });
    expect(fake([], "GET", "2.0")).toMatchObject({ ok: false });
    expect(fake([], "GET /x HTTP/1.1\r\n")).toMatchObject({ ok: false });
    const good = fake([
      "Host",
      "evil.test",
      "Connection",
      "x-drop",
      "x-drop",
      "1",
      "x-keep",
      "2",
      "Expect",
      "100-continue",
    ]);
    expect(good).toMatchObject({ ok: true, body: "none" });
    expect(good.ok && good.head.toString()).toBe(
      "POST /p HTTP/1.1\r\nhost: a.test\r\nx-keep: 2\r\nconnection: close\r\n\r\n",
    );
  });

  it("sends a request body as framed by the proxy: a length as is, chunks re-chunked", async () => {
    const server = await echoServer();
    const { proxy } = await proxyWith(allowLoopback);
    const target = `http://127.0.0.1:${server.port}/post`;
    const sized = await exchange(
      proxy.socketPath,
      `POST ${target} HTTP/1.1\r\nhost: x\r\ncontent-length: 11\r\n\r\nhello world`,
    );
    expect(sized.toString()).toMatch(/^HTTP\/1.1 200 [\s\S]*got hello world$/);
    const chunked = await exchange(
      proxy.socketPath,
      `POST ${target} HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\n\r\n`,
    );
    expect(chunked.toString()).toMatch(/^HTTP\/1.1 200 [\s\S]*got hello world$/);
    expect(server.bodies).toEqual(["hello world", "hello world"]);
  });

  it("an upstream that closes without answering gives a 502; one that stops midway, the bytes it sent", async () => {
    const silent = await rawUpstream((socket) => socket.destroy());
    const { proxy, records } = await proxyWith(allowLoopback);
    const refused = (
      await exchange(proxy.socketPath, `GET http://127.0.0.1:${silent.port}/ HTTP/1.1\r\nhost: x\r\n\r\n`)
    ).toString();
    expect(refused).toMatch(/^HTTP\/1.1 502 /);
    expect(refused).toContain("closed the connection without answering");
    await settled(records, 1);
    expect(records[0]).toMatchObject({ decision: "error", bytes_down: 0 });

    const partial = "HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\nonly this";
    const cut = await rawUpstream((socket) => socket.end(partial));
    const answer = await exchange(
      proxy.socketPath,
      `GET http://127.0.0.1:${cut.port}/ HTTP/1.1\r\nhost: x\r\n\r\n`,
    );
    expect(answer.toString()).toBe(partial);
    await settled(records, 2);
    expect(records[1]).toMatchObject({ decision: "allow", bytes_down: partial.length });
  });

  it("a client that goes away mid-answer takes the upstream connection with it", async () => {
    const server = await rawUpstream((socket) => {
      socket.write("HTTP/1.1 200 OK\r\ncontent-length: 1000000000\r\n\r\n");
      const block = Buffer.alloc(64 * 1024, 7);
      const pump = () => {
        while (!socket.destroyed && socket.write(block));
        if (!socket.destroyed) socket.once("drain", pump);
      };
      pump();
    });
    const { proxy, records } = await proxyWith(allowLoopback);
    await exchange(
      proxy.socketPath,
      `GET http://127.0.0.1:${server.port}/endless HTTP/1.1\r\nhost: x\r\n\r\n`,
      (socket, received) => {
        if (received > 1024 * 1024) socket.destroy();
      },
    );
    await settled(records, 1);
    for (let i = 0; i < 200 && server.closed < 1; i++) await new Promise((r) => setTimeout(r, 10));
    expect(server.closed).toBe(1);
    expect(records[0]).toMatchObject({ decision: "allow", reason: "the client closed the connection" });
    expect(records[0]!.bytes_down).toBeGreaterThan(1024 * 1024);
  });

  it("a denied plain request gets 403 and reaches nothing", async () => {
    const server = await rawUpstream((socket) => socket.end("HTTP/1.1 200 OK\r\n\r\n"));
    const { proxy, records } = await proxyWith(allowLoopback);
    const answer = (
      await exchange(proxy.socketPath, `GET http://denied.test:${server.port}/ HTTP/1.1\r\nhost: x\r\n\r\n`)
    ).toString();
    expect(answer).toMatch(/^HTTP\/1.1 403 /);
    expect(server.received).toEqual([]);
    await settled(records, 1);
    expect(records[0]).toMatchObject({ decision: "deny", host: "denied.test" });
  });
});
