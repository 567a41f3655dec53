import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { removeTempDirs, tempDir } from "./helpers.js";
import { methodOf, openEvents, rpc, serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

afterAll(removeTempDirs);

const ALICE = "alice-token-0123456789ab";
const EVE = "eve-token-0123456789abcd";

interface Raw {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

/** One HTTP request with exactly these headers (fetch would not let a test set Host or Origin). */
function raw(
  url: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      new URL(path, url),
      { method: options.method ?? "GET", headers: options.headers ?? {} },
      (res) => {
        // An event stream never ends: its status and headers are the answer.
        if (res.headers["content-type"]?.startsWith("text/event-stream")) {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: "" });
          return;
        }
        let body = "";
        res.setEncoding("utf8").on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

const rpcBody = (method: string, params: Record<string, unknown> = {}) =>
  JSON.stringify({ jsonrpc: "2.0", id: 1, method, params });

describe("attack: harness serve --http from a browser, another identity, or a flood", () => {
  let server: Awaited<ReturnType<typeof startHttpServer>>;
  let host: string;
  let root: string;

  beforeAll(async () => {
    root = await tempDir("harness-attack-http-");
    const tokens = join(await tempDir(), "tokens.json");
    await writeFile(tokens, JSON.stringify({ [ALICE]: "alice", [EVE]: "eve" }));
    const config = await serverConfig({
      server: { identities: { alice: { workspaces: [root] }, eve: { workspaces: [root] } } },
    });
    server = await startHttpServer(serverEnv(config), ["--tokens", tokens]);
    host = new URL(server.url).host;
  });

  afterAll(async () => {
    server.child.kill("SIGTERM");
    await server.exited;
  });

  it("CSRF: a page on evil.example POSTing /rpc with a simple content type and the token in the query gets nothing", async () => {
    const simple = {
      method: "POST",
      headers: { host, "content-type": "text/plain", origin: "http://evil.example" },
      body: rpcBody("session/list"),
    };
    const fromEvil = await raw(server.url, `/rpc?token=${ALICE}`, simple);
    expect(fromEvil.status).toBe(403);
    expect(JSON.parse(fromEvil.body).error.code).toBe(-32004);
    expect(fromEvil.headers["access-control-allow-origin"]).toBeUndefined();
    // Even with no Origin header (an old browser, a form): a POST's token must be in the header.
    const noOrigin = await raw(server.url, `/rpc?token=${ALICE}`, {
      ...simple,
      headers: { host, "content-type": "text/plain" },
    });
    expect(noOrigin.status).toBe(401);
    expect(noOrigin.body).not.toContain("sessions");
  });

  it("an EventSource opened by a page of another origin is refused; the same request from the page's own origin is served", async () => {
    const script = join(root, "hello.json");
    await writeFile(script, JSON.stringify({ replies: [{ text: "hello" }] }));
    const started = await rpc(server.url, ALICE, "session/start", { workspace: root, options: { script } });
    const session = started.body.result?.session as string;
    expect(session, JSON.stringify(started.body)).toBeTruthy();
    const path = `/events?session=${session}&token=${ALICE}`;
    const evil = await raw(server.url, path, { headers: { host, origin: "http://evil.example" } });
    expect(evil.status).toBe(403);
    const own = await raw(server.url, path, { headers: { host, origin: server.url } });
    expect(own.status).toBe(200);
  });

  it("DNS rebinding: a right token under another Host name is refused", async () => {
    const port = new URL(server.url).port;
    for (const name of [`evil.example:${port}`, `127.0.0.1.evil.example:${port}`, "localhost:1"]) {
      const response = await raw(server.url, "/rpc", {
        method: "POST",
        headers: { host: name, authorization: `Bearer ${ALICE}`, "content-type": "application/json" },
        body: rpcBody("session/list"),
      });
      expect(response.status, name).toBe(421);
      expect(response.body).not.toContain("sessions");
    }
  });

  it("near-miss tokens and tokens in other places are refused", async () => {
    const attempts: Record<string, string>[] = [
      { authorization: `Bearer ${ALICE.slice(0, -1)}` },
      { authorization: `Bearer ${ALICE}x` },
      { authorization: `Bearer ${ALICE.toUpperCase()}` },
      { authorization: `Basic ${Buffer.from(`x:${ALICE}`).toString("base64")}` },
      { authorization: ALICE },
      { cookie: `token=${ALICE}` },
      { "x-token": ALICE },
      { authorization: "Bearer " },
    ];
    for (const headers of attempts) {
      const response = await raw(server.url, "/rpc", {
        method: "POST",
        headers: { host, "content-type": "application/json", ...headers },
        body: rpcBody("session/list"),
      });
      expect(response.status, JSON.stringify(headers)).toBe(401);
    }
  });

  it("another identity cannot list, answer (by guessing the id), fork or follow a pending approval's session", async () => {
    const script = join(root, "write.json");
    await writeFile(
      script,
      JSON.stringify({
        replies: [
          { text: "", calls: [{ id: "w1", name: "write_file", arguments: { path: "x.txt", content: "x" } }] },
          { text: "done" },
        ],
      }),
    );
    const started = await rpc(server.url, ALICE, "session/start", {
      workspace: root,
      goal: "write x",
      options: { script },
    });
    const session = started.body.result?.session as string;
    const events = openEvents(server.url, ALICE, session);
    const asked = await events.waitFor((e) => methodOf(e) === "approval/requested");
    const approvalId = JSON.parse(asked.data).params.approval_id as string;

    expect((await rpc(server.url, EVE, "approval/list", {})).body.result?.approvals).toEqual([]);
    expect((await rpc(server.url, EVE, "approval/list", { session })).body.result?.approvals).toEqual([]);
    const guess = await rpc(server.url, EVE, "approval/respond", {
      approval_id: approvalId,
      decision: "accept",
    });
    expect(guess.body.error).toMatchObject({ code: -32002, data: { code: "APPROVAL_NOT_FOUND" } });
    // The answer for an id that does not exist is the same: existence does not leak.
    const nothing = await rpc(server.url, EVE, "approval/respond", {
      approval_id: `${session}:999`,
      decision: "accept",
    });
    expect(nothing.body.error?.message.replace(`${session}:999`, "ID")).toBe(
      guess.body.error?.message.replace(approvalId, "ID"),
    );
    expect((await rpc(server.url, EVE, "session/fork", { session })).body.error?.code).toBe(-32002);
    expect((await rpc(server.url, EVE, "turn/interrupt", { session })).body.error?.code).toBe(-32002);
    expect(await openEvents(server.url, EVE, session).status).toBe(404);

    // The session is still waiting for ALICE, and nothing was written.
    expect((await rpc(server.url, ALICE, "approval/list", { session })).body.result?.approvals).toHaveLength(
      1,
    );
    expect(existsSync(join(root, "x.txt"))).toBe(false);
    await rpc(server.url, ALICE, "approval/respond", { approval_id: approvalId, decision: "decline" });
    await events.waitFor((e) => methodOf(e) === "turn/completed");
    events.close();
  });

  it("one identity opening event streams without end is capped at 64; the others still get theirs", async () => {
    const script = join(root, "flood.json");
    await writeFile(script, JSON.stringify({ replies: [{ text: "hello" }] }));
    const mine = (await rpc(server.url, ALICE, "session/start", { workspace: root, options: { script } }))
      .body.result?.session as string;
    const theirs = (await rpc(server.url, EVE, "session/start", { workspace: root, options: { script } }))
      .body.result?.session as string;
    const streams = Array.from({ length: 64 }, () => openEvents(server.url, ALICE, mine));
    try {
      expect(await Promise.all(streams.map((s) => s.status))).toEqual(Array(64).fill(200));
      const extra = openEvents(server.url, ALICE, mine);
      expect(await extra.status).toBe(429);
      extra.close();
      const other = openEvents(server.url, EVE, theirs);
      expect(await other.status).toBe(200);
      other.close();
      streams.pop()?.close();
      await new Promise((resolve) => setTimeout(resolve, 200));
      const again = openEvents(server.url, ALICE, mine);
      expect(await again.status).toBe(200);
      again.close();
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  it("slowloris: a connection that never finishes its headers is closed", async () => {
    const { port, hostname } = new URL(server.url);
    const socket = connect(Number(port), hostname);
    const closed = new Promise<number>((resolve) => socket.on("close", () => resolve(Date.now())));
    socket.on("error", () => {});
    const opened = Date.now();
    socket.write(`GET / HTTP/1.1\r\nHost: ${host}\r\n`);
    const drip = setInterval(() => socket.write("X-Slow: 1\r\n"), 1_000);
    try {
      expect((await closed) - opened).toBeLessThan(20_000);
    } finally {
      clearInterval(drip);
      socket.destroy();
    }
  }, 30_000);

  it("a body declared as 100 MiB is answered 413 at once, without the body being sent", async () => {
    const started = Date.now();
    const response = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(new URL("/rpc", server.url), {
        method: "POST",
        headers: {
          authorization: `Bearer ${ALICE}`,
          "content-type": "application/json",
          "content-length": String(100 * 1024 * 1024),
        },
      });
      req.on("response", (res) => resolve(res.statusCode ?? 0));
      req.on("error", reject);
      req.write("{");
    });
    expect(response).toBe(413);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("an endless chunked body is answered 413 once it passes 4 MiB, not buffered forever", async () => {
    let sent = 0;
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(new URL("/rpc", server.url), {
        method: "POST",
        headers: { authorization: `Bearer ${ALICE}`, "content-type": "application/json" },
      });
      let answered = false;
      req.on("response", (res) => {
        answered = true;
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on("error", (error) => (answered ? undefined : reject(error)));
      const chunk = Buffer.alloc(256 * 1024, 0x20);
      const pump = () => {
        while (!answered && sent < 64 * 1024 * 1024) {
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once("drain", pump);
            return;
          }
        }
      };
      pump();
    });
    expect(status).toBe(413);
    expect(sent).toBeLessThan(64 * 1024 * 1024);
  });
});
