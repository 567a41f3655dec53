import { readdir, readFile } from "node:fs/promises";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import { type AddressInfo, connect, createServer as createTcpServer, type Socket } from "node:net";
import path from "node:path";
import { type TLSSocket, connect as tlsConnect } from "node:tls";
import { deflateSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { type Credentials, placeholderFor, resolveCredentials } from "../../src/network/credentials.js";
import {
  type EgressConnection,
  type EgressProxy,
  PROXY_CA_BUNDLE_NAME,
  startEgressProxy,
} from "../../src/network/proxy.js";
import { SessionAuthority, sandboxBundle } from "../../src/network/session-ca.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const TOKEN = "npm_realSecretValue_0123456789abcdef";
/** A CA of the test's own: the "real" upstream's certificate, trusted by the proxy only. */
const upstreamCa = SessionAuthority.create();
/** The session's CA: what the proxy terminates TLS with. */
const session = SessionAuthority.create();

function credentialsFor(hosts: string[]): Credentials {
  return resolveCredentials(
    { NPM_TOKEN: { hosts, header: "authorization", format: "Bearer {value}" } },
    { NPM_TOKEN: TOKEN },
  ).credentials;
}

/** Every request head a listener received, verbatim. */
interface Listener {
  port: number;
  heads: string[];
}

/** A loopback HTTPS server with a certificate for localhost from the test's own CA. */
async function httpsUpstream(): Promise<Listener> {
  const heads: string[] = [];
  const leaf = upstreamCa.leafFor("localhost");
  const server: HttpsServer = createHttpsServer({ key: leaf.key, cert: leaf.cert }, (request, response) => {
    heads.push(`${request.method} ${request.url}\n${JSON.stringify(request.headers)}`);
    request.resume();
    request.on("end", () => response.end(`ok ${request.url}`));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((done) => server.close(() => done()));
  });
  return { port: (server.address() as AddressInfo).port, heads };
}

/** A loopback TCP listener that keeps every byte it receives and answers each with a tiny HTTP reply. */
async function rawListener(): Promise<{ port: number; bytes: () => string }> {
  const chunks: Buffer[] = [];
  const server = createTcpServer((socket) => {
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      if (chunk.includes("\r\n\r\n"))
        socket.end("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
  return {
    port: (server.address() as AddressInfo).port,
    bytes: () => Buffer.concat(chunks).toString("latin1"),
  };
}

/** A loopback TCP listener that keeps what it receives and answers the first request head with `answer`. */
async function answeringListener(answer: Buffer): Promise<{ port: number; bytes: () => string }> {
  const chunks: Buffer[] = [];
  const server = createTcpServer((socket) => {
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      if (Buffer.concat(chunks).includes("\r\n\r\n")) socket.end(answer);
    });
    socket.on("error", () => undefined);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
  return {
    port: (server.address() as AddressInfo).port,
    bytes: () => Buffer.concat(chunks).toString("latin1"),
  };
}

/** The body of a chunked HTTP/1.1 answer, its framing removed. */
function dechunked(answer: string): string {
  let rest = answer.slice(answer.indexOf("\r\n\r\n") + 4);
  let body = "";
  for (;;) {
    const line = rest.indexOf("\r\n");
    const size = Number.parseInt(rest.slice(0, line), 16);
    if (!(size > 0)) return body;
    body += rest.slice(line + 2, line + 2 + size);
    rest = rest.slice(line + 2 + size + 2);
  }
}

interface Harness {
  proxy: EgressProxy;
  records: EgressConnection[];
  used: string[];
}

async function proxyWith(
  credentials: Credentials,
  trust: string[] = [upstreamCa.certificate],
): Promise<Harness> {
  const records: EgressConnection[] = [];
  const used: string[] = [];
  const proxy = await startEgressProxy({
    decide: async (host) => ({ decision: "allow", rule: `net(${host})`, reason: "allowed", exact: true }),
    record: (connection) => records.push(connection),
    resolve: async () => ["127.0.0.1"],
    limits: { idleMs: 5_000 },
    credentials: {
      credentials,
      authority: session,
      trust,
      bundle: sandboxBundle(session),
      used: (name, host) => used.push(`${name}@${host}`),
    },
  });
  cleanups.push(() => proxy.close());
  return { proxy, records, used };
}

/** A CONNECT through the proxy's socket; resolves with the socket once the tunnel is open. */
async function tunnelTo(proxy: EgressProxy, authority: string): Promise<Socket> {
  const socket = connect(proxy.socketPath);
  cleanups.push(() => void socket.destroy());
  socket.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\n\r\n`);
  let answer = Buffer.alloc(0);
  await new Promise<void>((done, fail) => {
    const onData = (chunk: Buffer) => {
      answer = Buffer.concat([answer, chunk]);
      if (answer.includes("\r\n\r\n")) {
        socket.off("data", onData);
        socket.pause();
        if (answer.toString().startsWith("HTTP/1.1 200")) done();
        else fail(new Error(answer.toString()));
      }
    };
    socket.on("data", onData);
    socket.once("error", fail);
  });
  return socket;
}

/** TLS over a tunnel, trusting the session CA only. */
async function tlsOver(socket: Socket, servername: string): Promise<TLSSocket> {
  const secure = tlsConnect({ socket, servername, ca: [session.certificate] });
  cleanups.push(() => void secure.destroy());
  await new Promise<void>((done, fail) => {
    secure.once("secureConnect", () => done());
    secure.once("error", fail);
  });
  return secure;
}

/** Write `parts` (one by one, a tick apart) and read until the peer closes. */
async function exchange(socket: Socket | TLSSocket, parts: string[]): Promise<string> {
  const received: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  const closed = new Promise<void>((done) => {
    socket.once("close", () => done());
    socket.once("end", () => done());
    socket.once("error", () => done());
  });
  socket.resume();
  for (const part of parts) {
    socket.write(part);
    await new Promise((done) => setTimeout(done, 5));
  }
  await closed;
  return Buffer.concat(received).toString("latin1");
}

describe("credentials: resolved from harness's environment", () => {
  it("an unset or empty variable makes the credential unavailable with a notice, never a crash", () => {
    const { credentials, notices } = resolveCredentials(
      {
        NPM_TOKEN: { hosts: ["registry.npmjs.org"], header: "authorization", format: "Bearer {value}" },
        GH_TOKEN: { hosts: ["api.github.com"], header: "authorization" },
      },
      { GH_TOKEN: "" },
    );
    expect(credentials.bindings).toEqual([]);
    expect(notices).toEqual([
      expect.stringMatching(/^credential NPM_TOKEN is unavailable: harness's environment has no NPM_TOKEN/),
      expect.stringMatching(/^credential GH_TOKEN is unavailable/),
    ]);
  });

  it("each session gets a recognisable, random placeholder", () => {
    const a = placeholderFor("NPM_TOKEN");
    expect(a).toMatch(/^harness-placeholder-NPM_TOKEN-[0-9a-f]{32}$/);
    expect(placeholderFor("NPM_TOKEN")).not.toBe(a);
    const { credentials } = resolveCredentials(
      { NPM_TOKEN: { hosts: ["Registry.NPMjs.org."], header: "Authorization" } },
      { NPM_TOKEN: TOKEN },
    );
    expect(credentials.placeholders().NPM_TOKEN).toMatch(/^harness-placeholder-NPM_TOKEN-/);
    expect(credentials.placeholders().NPM_TOKEN).not.toContain(TOKEN);
    expect(credentials.boundTo("registry.npmjs.org")).toHaveLength(1);
  });

  it("substitutes only for a bound host: the named header gets the format, others the value in place", () => {
    const credentials = credentialsFor(["registry.npmjs.org"]);
    const placeholder = credentials.placeholders().NPM_TOKEN as string;
    const headers = { authorization: placeholder, "x-token": `t=${placeholder};`, accept: "*/*" };
    const bound = credentials.substitute("registry.npmjs.org", headers);
    expect(bound.headers).toEqual({
      authorization: `Bearer ${TOKEN}`,
      "x-token": `t=${TOKEN};`,
      accept: "*/*",
    });
    expect(bound.used).toEqual(["NPM_TOKEN"]);
    const elsewhere = credentials.substitute("evil.example", headers);
    expect(elsewhere.headers).toEqual(headers);
    expect(elsewhere.used).toEqual([]);
  });
});

describe("the proxy substitutes credentials for bound hosts only", () => {
  it("HTTPS to a bound host: TLS terminated with the session CA, the real value reaches the real host", async () => {
    const upstream = await httpsUpstream();
    const credentials = credentialsFor(["localhost"]);
    const placeholder = credentials.placeholders().NPM_TOKEN as string;
    const { proxy, records, used } = await proxyWith(credentials);
    const secure = await tlsOver(await tunnelTo(proxy, `localhost:${upstream.port}`), "localhost");
    const answer = await exchange(secure, [
      `GET /pkg HTTP/1.1\r\nhost: localhost:${upstream.port}\r\nauthorization: Bearer ${placeholder}\r\nconnection: close\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain("ok /pkg");
    expect(upstream.heads).toHaveLength(1);
    expect(upstream.heads[0]).toContain(`"authorization":"Bearer ${TOKEN}"`);
    expect(upstream.heads[0]).not.toContain(placeholder);
    expect(used).toEqual(["NPM_TOKEN@localhost"]);
    await proxy.close();
    expect(records).toEqual([
      expect.objectContaining({ host: "localhost", decision: "allow", address: "127.0.0.1" }),
    ]);
    expect(JSON.stringify(records)).not.toContain(TOKEN);
  });

  it("pipelined requests and a request split across packets are each substituted", async () => {
    const upstream = await httpsUpstream();
    const credentials = credentialsFor(["localhost"]);
    const placeholder = credentials.placeholders().NPM_TOKEN as string;
    const { proxy, used } = await proxyWith(credentials);
    const secure = await tlsOver(await tunnelTo(proxy, `localhost:${upstream.port}`), "localhost");
    const request = (path: string, close: boolean) =>
      `GET ${path} HTTP/1.1\r\nhost: localhost:${upstream.port}\r\nauthorization: ${placeholder}\r\n${close ? "connection: close\r\n" : ""}\r\n`;
    const third = request("/c", true);
    const cut = third.indexOf(placeholder) + 10;
    // Two requests in one write, then a third cut in the middle of the placeholder.
    const answer = await exchange(secure, [
      request("/a", false) + request("/b", false),
      third.slice(0, cut),
      third.slice(cut),
    ]);
    expect(answer.match(/HTTP\/1\.1 200/g)).toHaveLength(3);
    expect(upstream.heads.map((head) => head.split("\n")[0])).toEqual(["GET /a", "GET /b", "GET /c"]);
    for (const head of upstream.heads) {
      expect(head).toContain(`"authorization":"Bearer ${TOKEN}"`);
      expect(head).not.toContain(placeholder);
    }
    expect(used).toHaveLength(3);
  });

  it("a placeholder sent to a host it is not bound to is forwarded untouched (the listener sees only it)", async () => {
    const listener = await rawListener();
    const credentials = credentialsFor(["registry.npmjs.org"]);
    const placeholder = credentials.placeholders().NPM_TOKEN as string;
    const { proxy, used } = await proxyWith(credentials);
    // Tunnelled: bytes only, no TLS termination.
    const socket = await tunnelTo(proxy, `127.0.0.1:${listener.port}`);
    await exchange(socket, [
      `GET / HTTP/1.1\r\nhost: registry.npmjs.org\r\nauthorization: Bearer ${placeholder}\r\n\r\n`,
    ]);
    // Plain HTTP with a bound host's name in the Host header but another host in the URL.
    const plain = connect(proxy.socketPath);
    cleanups.push(() => void plain.destroy());
    await exchange(plain, [
      `GET http://127.0.0.1:${listener.port}/x HTTP/1.1\r\nhost: registry.npmjs.org\r\nauthorization: Bearer ${placeholder}\r\nconnection: close\r\n\r\n`,
    ]);
    expect(listener.bytes()).toContain(`authorization: Bearer ${placeholder}`);
    expect(listener.bytes()).not.toContain(TOKEN);
    expect(used).toEqual([]);
  });

  it("a bound host reached by its IP address gets no value", async () => {
    const listener = await rawListener();
    const credentials = credentialsFor(["localhost"]);
    const placeholder = credentials.placeholders().NPM_TOKEN as string;
    const { proxy, used } = await proxyWith(credentials);
    const socket = await tunnelTo(proxy, `127.0.0.1:${listener.port}`);
    await exchange(socket, [
      `GET / HTTP/1.1\r\nhost: localhost:${listener.port}\r\nauthorization: ${placeholder}\r\n\r\n`,
    ]);
    expect(listener.bytes()).toContain(placeholder);
    expect(listener.bytes()).not.toContain(TOKEN);
    expect(used).toEqual([]);
  });

  it("plain HTTP to a bound host is rewritten in the proxy", async () => {
    const listener = await rawListener();
    const credentials = credentialsFor(["localhost"]);
    const placeholder = credentials.placeholders().NPM_TOKEN as string;
    const { proxy, used } = await proxyWith(credentials);
    const plain = connect(proxy.socketPath);
    cleanups.push(() => void plain.destroy());
    await exchange(plain, [
      `GET http://localhost:${listener.port}/x HTTP/1.1\r\nhost: localhost:${listener.port}\r\nauthorization: ${placeholder}\r\nconnection: close\r\n\r\n`,
    ]);
    expect(listener.bytes().toLowerCase()).toContain(`authorization: bearer ${TOKEN.toLowerCase()}`);
    expect(listener.bytes()).not.toContain(placeholder);
    expect(used).toEqual(["NPM_TOKEN@localhost"]);
  });

  it("a raw answer pipelined behind a bound host's answer waits until that answer is written whole", async () => {
    // The bound host's answer goes through node's client and is scrubbed; the next request, for a
    // host with no credential, is relayed raw: its bytes must follow the first answer, never cut into it.
    const big = "a".repeat(2 * 1024 * 1024);
    const bound = await answeringListener(
      Buffer.from(`HTTP/1.1 200 OK\r\ncontent-length: ${big.length}\r\nconnection: close\r\n\r\n${big}`),
    );
    const second = "HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nsecond";
    const unbound = await answeringListener(Buffer.from(second));
    const { proxy } = await proxyWith(credentialsFor(["localhost"]));
    const plain = connect(proxy.socketPath);
    cleanups.push(() => void plain.destroy());
    // A slow reader at first: the first answer backs up in the proxy while its upstream closes.
    plain.write(
      `GET http://localhost:${bound.port}/big HTTP/1.1\r\nhost: localhost\r\n\r\n` +
        `GET http://127.0.0.1:${unbound.port}/small HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`,
    );
    plain.pause();
    await new Promise((done) => setTimeout(done, 500));
    const answer = await exchange(plain, []);
    expect(answer.endsWith(second)).toBe(true);
    const first = answer.slice(0, answer.length - second.length);
    expect(first).toMatch(/^HTTP\/1.1 200 /);
    expect(first.slice(first.indexOf("\r\n\r\n")).split("a").length - 1).toBe(big.length);
    expect(first.endsWith("a") || first.endsWith("0\r\n\r\n")).toBe(true);
  });

  it("a bound host's echo of the value reaches the client as the placeholder (header and deflated body)", async () => {
    const body = deflateSync(Buffer.from(`you sent Bearer ${TOKEN} and ${encodeURIComponent(TOKEN)}`));
    const listener = await answeringListener(
      Buffer.concat([
        Buffer.from(
          `HTTP/1.1 200 OK\r\nx-echo: Bearer ${TOKEN}\r\ncontent-encoding: deflate\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`,
        ),
        body,
      ]),
    );
    const credentials = credentialsFor(["localhost"]);
    const placeholder = credentials.placeholders().NPM_TOKEN as string;
    const { proxy } = await proxyWith(credentials);
    const plain = connect(proxy.socketPath);
    cleanups.push(() => void plain.destroy());
    const answer = await exchange(plain, [
      `GET http://localhost:${listener.port}/x HTTP/1.1\r\nhost: localhost:${listener.port}\r\nauthorization: ${placeholder}\r\naccept-encoding: zstd\r\nconnection: close\r\n\r\n`,
    ]);
    // The host was asked only for codings the proxy can undo, and got the real value.
    expect(listener.bytes().toLowerCase()).toContain("accept-encoding: gzip, deflate, br");
    expect(listener.bytes()).toContain(TOKEN);
    expect(answer).toContain(`x-echo: Bearer ${placeholder}`);
    expect(dechunked(answer)).toBe(`you sent Bearer ${placeholder} and ${placeholder}`);
    expect(answer.toLowerCase()).not.toContain("content-encoding");
    expect(answer).not.toContain(TOKEN);
  });

  it("a bound host's answer in a coding the proxy cannot read is refused with 502, never passed on", async () => {
    const listener = await answeringListener(
      Buffer.from(
        `HTTP/1.1 200 OK\r\ncontent-encoding: zstd\r\ncontent-length: 14\r\nconnection: close\r\n\r\nraw ${TOKEN.slice(0, 10)}`,
      ),
    );
    const credentials = credentialsFor(["localhost"]);
    const placeholder = credentials.placeholders().NPM_TOKEN as string;
    const { proxy, records } = await proxyWith(credentials);
    const plain = connect(proxy.socketPath);
    cleanups.push(() => void plain.destroy());
    const answer = await exchange(plain, [
      `GET http://localhost:${listener.port}/x HTTP/1.1\r\nhost: localhost:${listener.port}\r\nauthorization: ${placeholder}\r\nconnection: close\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 502 /);
    expect(answer).toContain("cannot be checked for credentials");
    expect(answer).not.toContain(`raw ${TOKEN.slice(0, 10)}`);
    for (let i = 0; i < 100 && records.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(records[0]).toMatchObject({ decision: "error" });
  });

  it("a TLS server name other than the CONNECT host is refused: nothing reaches the upstream", async () => {
    const upstream = await httpsUpstream();
    const credentials = credentialsFor(["localhost"]);
    const { proxy, records, used } = await proxyWith(credentials);
    const socket = await tunnelTo(proxy, `localhost:${upstream.port}`);
    await expect(tlsOver(socket, "evil.example")).rejects.toThrow();
    await proxy.close();
    expect(upstream.heads).toEqual([]);
    expect(used).toEqual([]);
    expect(records).toEqual([
      expect.objectContaining({
        decision: "deny",
        reason: expect.stringContaining("is not the CONNECT host"),
      }),
    ]);
  });

  it("a request whose Host is another host is refused with 421 inside a bound tunnel", async () => {
    const upstream = await httpsUpstream();
    const credentials = credentialsFor(["localhost"]);
    const placeholder = credentials.placeholders().NPM_TOKEN as string;
    const { proxy, used } = await proxyWith(credentials);
    const secure = await tlsOver(await tunnelTo(proxy, `localhost:${upstream.port}`), "localhost");
    const answer = await exchange(secure, [
      `GET / HTTP/1.1\r\nhost: evil.example\r\nauthorization: ${placeholder}\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 421/);
    expect(upstream.heads).toEqual([]);
    expect(used).toEqual([]);
  });

  it("an upstream whose certificate harness does not trust gets no request (502)", async () => {
    const upstream = await httpsUpstream();
    const credentials = credentialsFor(["localhost"]);
    const placeholder = credentials.placeholders().NPM_TOKEN as string;
    // The proxy trusts only the session CA: the upstream's own test CA is not given.
    const { proxy } = await proxyWith(credentials, [session.certificate]);
    const secure = await tlsOver(await tunnelTo(proxy, `localhost:${upstream.port}`), "localhost");
    const answer = await exchange(secure, [
      `GET / HTTP/1.1\r\nhost: localhost:${upstream.port}\r\nauthorization: ${placeholder}\r\nconnection: close\r\n\r\n`,
    ]);
    expect(answer).toMatch(/^HTTP\/1\.1 502/);
    expect(upstream.heads).toEqual([]);
  });

  it("the proxy's directory holds the public CA bundle and no private key", async () => {
    const { proxy } = await proxyWith(credentialsFor(["localhost"]));
    expect((await readdir(proxy.directory)).sort()).toEqual([PROXY_CA_BUNDLE_NAME, "proxy.sock"]);
    const bundle = await readFile(path.join(proxy.directory, PROXY_CA_BUNDLE_NAME), "utf8");
    expect(bundle).toContain(session.certificate.trim());
    expect(bundle).not.toMatch(/PRIVATE KEY/);
  });
});
