import { stat } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { connect, createServer as createTcpServer, type Socket, type Server as TcpServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { isInternalAddress } from "../../src/network/addresses.js";
import {
  type EgressConnection,
  type EgressDecision,
  type EgressProxy,
  parseAuthority,
  startEgressProxy,
} from "../../src/network/proxy.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A loopback HTTP server answering every request with `body`; it records what it was asked. */
async function upstream(
  body: Buffer | string = "hello from upstream",
): Promise<{ port: number; seen: string[] }> {
  const seen: string[] = [];
  const server: Server = createServer((request, response) => {
    seen.push(`${request.method} ${request.url} host=${request.headers.host}`);
    request.resume();
    request.on("end", () => {
      response.writeHead(200, { "content-type": "text/plain", "content-length": Buffer.byteLength(body) });
      response.end(body);
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
  server.unref();
  return { port: (server.address() as AddressInfo).port, seen };
}

/** A loopback TCP echo server (what a TLS server would be to a tunnel: bytes both ways). */
async function echo(): Promise<number> {
  const server: TcpServer = createTcpServer((socket) => socket.pipe(socket));
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
  return (server.address() as AddressInfo).port;
}

interface Harness {
  proxy: EgressProxy;
  records: EgressConnection[];
  asked: string[];
}

async function proxyWith(
  decide: (host: string, port: number) => EgressDecision,
  options: { resolve?: (host: string) => Promise<string[]>; maxHeaderBytes?: number } = {},
): Promise<Harness> {
  const records: EgressConnection[] = [];
  const asked: string[] = [];
  const proxy = await startEgressProxy({
    decide: async (host, port) => {
      asked.push(`${host}:${port}`);
      return decide(host, port);
    },
    record: (connection) => records.push(connection),
    ...(options.resolve ? { resolve: options.resolve } : {}),
    limits: { idleMs: 5_000, ...(options.maxHeaderBytes ? { maxHeaderBytes: options.maxHeaderBytes } : {}) },
  });
  cleanups.push(() => proxy.close());
  return { proxy, records, asked };
}

const allowExact = (): EgressDecision => ({
  decision: "allow",
  rule: "net(127.0.0.1)",
  reason: "allowed",
  exact: true,
});

/** Send raw bytes over the proxy's socket; resolve with everything it answered once it closes. */
function raw(
  socketPath: string,
  bytes: string | Buffer,
  keepOpen?: (socket: Socket, data: Buffer) => void,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      keepOpen?.(socket, Buffer.concat(chunks));
    });
    socket.on("error", reject);
    socket.on("close", () => resolve(Buffer.concat(chunks)));
    socket.write(bytes);
    if (keepOpen === undefined) socket.end();
  });
}

async function settled(records: EgressConnection[], count: number): Promise<void> {
  for (let i = 0; i < 200 && records.length < count; i++) await new Promise((r) => setTimeout(r, 10));
}

describe("the egress proxy", () => {
  it("listens on a socket in a private 0700 directory, and removes it when closed", async () => {
    const { proxy } = await proxyWith(allowExact);
    expect((await stat(proxy.directory)).mode & 0o777).toBe(0o700);
    expect((await stat(proxy.socketPath)).isSocket()).toBe(true);
    await proxy.close();
    await expect(stat(proxy.directory)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("tunnels an allowed CONNECT and records the bytes each way", async () => {
    const port = await echo();
    const { proxy, records, asked } = await proxyWith(allowExact);
    const payload = "x".repeat(10_000);
    const answer = await raw(
      proxy.socketPath,
      `CONNECT 127.0.0.1:${port} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`,
      (socket, data) => {
        const text = data.toString();
        if (text === "HTTP/1.1 200 Connection Established\r\n\r\n") socket.write(payload);
        if (text.length >= 39 + payload.length) socket.end();
      },
    );
    expect(answer.toString()).toBe(`HTTP/1.1 200 Connection Established\r\n\r\n${payload}`);
    await settled(records, 1);
    expect(asked).toEqual([`127.0.0.1:${port}`]);
    expect(records).toEqual([
      expect.objectContaining({
        host: "127.0.0.1",
        port,
        decision: "allow",
        rule: "net(127.0.0.1)",
        address: "127.0.0.1",
        bytes_up: 10_000,
        bytes_down: 10_000,
      }),
    ]);
  });

  it("delivers every byte to a slow client after the upstream has closed, and counts them", async () => {
    // The upstream sends its whole answer and closes at once; the client starts late and reads
    // slowly, so the tail is still queued in the proxy when the upstream's close arrives. Closing
    // the client then would cut the tail (it did, in about half the tries): it must be delivered.
    const size = 8 * 1024 * 1024;
    const body = Buffer.alloc(size, 7);
    const server: TcpServer = createTcpServer((socket) => socket.end(body));
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
    const port = (server.address() as AddressInfo).port;
    const { proxy, records } = await proxyWith(allowExact);
    const established = "HTTP/1.1 200 Connection Established\r\n\r\n";
    const slowly = () =>
      new Promise<{ head: string; count: number }>((resolve, reject) => {
        const socket = connect(proxy.socketPath);
        let head = "";
        let count = -established.length;
        socket.pause();
        setTimeout(() => socket.resume(), 300);
        socket.on("data", (chunk: Buffer) => {
          if (head.length < established.length) head += chunk.toString("latin1", 0, established.length);
          count += chunk.length;
          socket.pause();
          setTimeout(() => socket.resume(), 1);
        });
        socket.on("error", reject);
        socket.on("close", () => resolve({ head, count }));
        socket.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`);
      });
    const tries = 6;
    for (let i = 0; i < tries; i++) {
      const { head, count } = await slowly();
      expect(head.startsWith(established)).toBe(true);
      expect(count).toBe(size);
    }
    await settled(records, tries);
    expect(records).toHaveLength(tries);
    for (const record of records)
      expect(record).toMatchObject({ decision: "allow", bytes_up: 0, bytes_down: size });
  }, 60_000);

  it("refuses a denied CONNECT with 403 and a one-line reason, connecting nowhere", async () => {
    const port = await echo();
    const { proxy, records } = await proxyWith(() => ({
      decision: "deny",
      reason: `no rule allows 127.0.0.1:${port}: add --allow 'net(127.0.0.1:${port})'`,
      exact: false,
    }));
    const answer = (await raw(proxy.socketPath, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`)).toString();
    expect(answer).toMatch(/^HTTP\/1.1 403 Forbidden\r\n/);
    expect(answer.endsWith(`no rule allows 127.0.0.1:${port}: add --allow 'net(127.0.0.1:${port})'\n`)).toBe(
      true,
    );
    await settled(records, 1);
    expect(records).toEqual([expect.objectContaining({ decision: "deny", bytes_up: 0, bytes_down: 0 })]);
  });

  it("forwards a plain absolute-URI request to the checked address and records it", async () => {
    const server = await upstream("plain body");
    const { proxy, records } = await proxyWith(allowExact);
    const answer = (
      await raw(
        proxy.socketPath,
        `GET http://127.0.0.1:${server.port}/pkg?x=1 HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\nproxy-connection: keep-alive\r\nconnection: close\r\n\r\n`,
        () => undefined,
      )
    ).toString();
    expect(answer).toMatch(/^HTTP\/1.1 200 /);
    expect(answer.endsWith("plain body")).toBe(true);
    expect(server.seen).toEqual([`GET /pkg?x=1 host=127.0.0.1:${server.port}`]);
    await settled(records, 1);
    expect(records[0]).toMatchObject({ host: "127.0.0.1", port: server.port, decision: "allow" });
    expect(records[0]!.bytes_down).toBeGreaterThan("plain body".length);
    expect(records[0]!.bytes_up).toBeGreaterThan(0);
  });

  it("tells the upstream the host that was checked, not another one the client wrote in Host", async () => {
    const server = await upstream("plain body");
    const { proxy, records } = await proxyWith(allowExact);
    const answer = (
      await raw(
        proxy.socketPath,
        `GET http://127.0.0.1:${server.port}/x HTTP/1.1\r\nhost: evil.example\r\nconnection: close\r\n\r\n`,
        () => undefined,
      )
    ).toString();
    expect(answer).toMatch(/^HTTP\/1.1 200 /);
    expect(server.seen).toEqual([`GET /x host=127.0.0.1:${server.port}`]);
    await settled(records, 1);
    expect(records[0]).toMatchObject({ host: "127.0.0.1", decision: "allow" });
  });

  it("refuses a name that resolves to loopback unless the rule names that host exactly", async () => {
    const port = await echo();
    const resolve = async () => ["127.0.0.1"];
    const wildcard = await proxyWith(
      () => ({ decision: "allow", rule: "net(*.example.test)", reason: "allowed", exact: false }),
      { resolve },
    );
    const refused = (
      await raw(wildcard.proxy.socketPath, `CONNECT evil.example.test:${port} HTTP/1.1\r\n\r\n`)
    ).toString();
    expect(refused).toMatch(/^HTTP\/1.1 403 /);
    expect(refused).toContain("evil.example.test resolves to 127.0.0.1");
    await settled(wildcard.records, 1);
    expect(wildcard.records[0]).toMatchObject({ decision: "deny", rule: "net(*.example.test)" });

    const named = await proxyWith(
      () => ({ decision: "allow", rule: "net(local.example.test)", reason: "allowed", exact: true }),
      { resolve },
    );
    const answer = await raw(
      named.proxy.socketPath,
      `CONNECT local.example.test:${port} HTTP/1.1\r\n\r\n`,
      (socket, data) => {
        if (data.toString().startsWith("HTTP/1.1 200")) socket.end();
      },
    );
    expect(answer.toString()).toMatch(/^HTTP\/1.1 200 /);
  });

  it("refuses when any of a name's addresses is internal (no mixing a public and a private answer)", async () => {
    const { proxy } = await proxyWith(
      () => ({ decision: "allow", rule: "net(*.example.test)", reason: "allowed", exact: false }),
      { resolve: async () => ["93.184.216.34", "169.254.169.254"] },
    );
    const answer = (await raw(proxy.socketPath, "CONNECT a.example.test:443 HTTP/1.1\r\n\r\n")).toString();
    expect(answer).toMatch(/^HTTP\/1.1 403 /);
    expect(answer).toContain("169.254.169.254");
  });

  it("answers malformed and oversized requests with 400/431 and keeps serving", async () => {
    const { proxy, asked } = await proxyWith(allowExact, { maxHeaderBytes: 2048 });
    expect((await raw(proxy.socketPath, "this is not http\r\n\r\n")).toString()).toMatch(/^HTTP\/1.1 400 /);
    expect((await raw(proxy.socketPath, "CONNECT nohostport HTTP/1.1\r\n\r\n")).toString()).toMatch(
      /^HTTP\/1.1 400 /,
    );
    expect((await raw(proxy.socketPath, "CONNECT [zz]:443 HTTP/1.1\r\n\r\n")).toString()).toMatch(
      /^HTTP\/1.1 400 /,
    );
    expect((await raw(proxy.socketPath, "GET /relative HTTP/1.1\r\nhost: x\r\n\r\n")).toString()).toMatch(
      /^HTTP\/1.1 400 /,
    );
    expect(
      (
        await raw(proxy.socketPath, `GET http://a.test/ HTTP/1.1\r\nx-big: ${"a".repeat(4096)}\r\n\r\n`)
      ).toString(),
    ).toMatch(/^HTTP\/1.1 (431|400) /);
    expect((await raw(proxy.socketPath, Buffer.from([0, 1, 2, 255, 13, 10, 13, 10]))).toString()).toMatch(
      /^HTTP\/1.1 400 /,
    );
    expect(asked).toEqual([]);
    const server = await upstream("still here");
    const answer = (
      await raw(
        proxy.socketPath,
        `GET http://127.0.0.1:${server.port}/ HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`,
        () => undefined,
      )
    ).toString();
    expect(answer.endsWith("still here")).toBe(true);
  });

  it("closing the proxy ends open tunnels and records them before close() resolves", async () => {
    const port = await echo();
    const { proxy, records } = await proxyWith(allowExact);
    let closed = false;
    const answered = new Promise<void>((ready) => {
      const socket = connect(proxy.socketPath);
      socket.on("data", (chunk: Buffer) => {
        if (chunk.toString().startsWith("HTTP/1.1 200")) ready();
      });
      socket.on("error", () => undefined);
      socket.on("close", () => {
        closed = true;
      });
      socket.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`);
    });
    await answered;
    await proxy.close();
    expect(records).toEqual([expect.objectContaining({ decision: "allow", port })]);
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(true);
  });

  it("records an allowed connection whose upstream refuses as an error with a 502", async () => {
    const port = await echo();
    cleanups
      .splice(0)
      .reverse()
      .forEach((c) => void c());
    await new Promise((r) => setTimeout(r, 50));
    const { proxy, records } = await proxyWith(allowExact);
    const answer = (await raw(proxy.socketPath, `CONNECT 127.0.0.1:${port} HTTP/1.1\r\n\r\n`)).toString();
    expect(answer).toMatch(/^HTTP\/1.1 502 /);
    await settled(records, 1);
    expect(records[0]).toMatchObject({ decision: "error", bytes_up: 0, bytes_down: 0 });
  });
});

describe("parseAuthority", () => {
  it("takes HOST:PORT and [V6]:PORT only", () => {
    expect(parseAuthority("Registry.NPMJS.org:443")).toEqual({ host: "registry.npmjs.org", port: 443 });
    expect(parseAuthority("[::1]:8080")).toEqual({ host: "::1", port: 8080 });
    for (const bad of ["host", "host:0", "host:65536", "::1:80", "[::1]", "a b:80", "host:80x", ""]) {
      expect(parseAuthority(bad)).toBeUndefined();
    }
  });
});

describe("isInternalAddress", () => {
  it("covers loopback, private, CGNAT, link-local, ULA, unspecified, multicast and mapped forms", () => {
    for (const internal of [
      "127.0.0.1",
      "10.1.2.3",
      "172.16.0.1",
      "192.168.1.1",
      "100.64.0.1",
      "169.254.169.254",
      "0.0.0.0",
      "224.0.0.1",
      "::1",
      "::",
      "fd00::1",
      "fe80::1",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:10.0.0.1",
    ]) {
      expect(isInternalAddress(internal), internal).toBe(true);
    }
    for (const external of [
      "8.8.8.8",
      "93.184.216.34",
      "2606:4700:4700::1111",
      "::ffff:8.8.8.8",
      "172.32.0.1",
    ]) {
      expect(isInternalAddress(external), external).toBe(false);
    }
  });
});
