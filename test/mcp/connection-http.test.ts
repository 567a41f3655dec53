import { type ChildProcess, spawn } from "node:child_process";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { McpCallError, McpConnection, McpStartError } from "../../src/mcp/connection.js";
import { freePort } from "../support/net.js";
import { definition, EVERYTHING } from "./connection-fixtures.js";

/** Reference servers started by a test, killed after it. */
const servers: ChildProcess[] = [];
const connections: McpConnection[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((connection) => connection.close()));
  for (const server of servers.splice(0)) server.kill("SIGKILL");
});

/** server-everything over HTTP (`streamableHttp` or the older `sse`), once it listens. */
async function everythingOverHttp(
  mode: "streamableHttp" | "sse",
  reusePort?: number,
): Promise<{ port: number; server: ChildProcess }> {
  const port = reusePort ?? (await freePort());
  const server = spawn(process.execPath, [EVERYTHING, mode], {
    env: { PATH: process.env.PATH, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  servers.push(server);
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not listen: ${output}`)), 10_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/(listening|running) on port/i.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    server.stdout!.on("data", onData);
    server.stderr!.on("data", onData);
  });
  return { port, server };
}

function connection(raw: Record<string, unknown>, environment: Record<string, string> = {}): McpConnection {
  const made = new McpConnection({ name: "remote", definition: definition(raw), environment });
  connections.push(made);
  return made;
}

describe("a remote server over Streamable HTTP (server-everything)", () => {
  it("connects, lists and calls tools", async () => {
    const { port } = await everythingOverHttp("streamableHttp");
    const remote = connection({ url: `http://127.0.0.1:${port}/mcp` });
    await remote.start();
    expect(remote.state).toBe("ready");
    const tools = await remote.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["echo", "get-sum"]));
    expect(await remote.callTool("echo", { message: "over http" })).toMatchObject({
      content: [{ type: "text", text: "Echo: over http" }],
    });
  });

  it("fails the call in flight when the server dies, and reconnects to a server back on the same address", async () => {
    const { port, server } = await everythingOverHttp("streamableHttp");
    const remote = connection({ url: `http://127.0.0.1:${port}/mcp` });
    await remote.start();
    const began = Date.now();
    const call = remote.callTool("trigger-long-running-operation", { duration: 20, steps: 2 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    server.kill("SIGKILL");
    const error = await call;
    expect(Date.now() - began).toBeLessThan(5_000);
    expect(error).toBeInstanceOf(McpCallError);
    expect(error).toMatchObject({ kind: "disconnected", outcome: "unknown" });
    expect(remote.state).toBe("failed");

    // The old server must have released the port before the new one binds it.
    if (server.exitCode === null && server.signalCode === null)
      await new Promise((resolve) => server.once("exit", resolve));
    await everythingOverHttp("streamableHttp", port);
    expect(await remote.callTool("echo", { message: "back" })).toMatchObject({
      content: [{ text: "Echo: back" }],
    });
    expect(remote.starts).toBe(2);
  });
});

describe("a remote server that went away while idle", () => {
  it("fails the next call unsent after one reconnect attempt, and is reached again by start()", async () => {
    const { port, server } = await everythingOverHttp("streamableHttp");
    let noticed = (): void => undefined;
    const dropped = new Promise<void>((resolve) => {
      noticed = resolve;
    });
    const remote = new McpConnection({
      name: "remote",
      definition: definition({ url: `http://127.0.0.1:${port}/mcp`, startup_timeout_ms: 2_000 }),
      environment: {},
      onEvent: (event) => {
        if (event.type === "disconnected") noticed();
      },
    });
    connections.push(remote);
    await remote.start();
    server.kill("SIGKILL");
    await new Promise((resolve) => server.once("exit", resolve));
    // Idle means the call comes after the client saw its event stream end (if it sees that at
    // all): a drop noticed while a call is in flight is a different case (the call is unknown).
    await Promise.race([dropped, new Promise((resolve) => setTimeout(resolve, 3_000))]);
    const error = await remote.callTool("echo", { message: "anyone?" }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ kind: "not_connected", outcome: "not_sent" });
    expect(remote.state).toBe("failed");

    await everythingOverHttp("streamableHttp", port);
    await remote.start();
    expect(await remote.callTool("echo", { message: "hello again" })).toMatchObject({
      content: [{ text: "Echo: hello again" }],
    });
  });
});

describe("a remote server over the older HTTP+SSE transport", () => {
  it("is reached by falling back from Streamable HTTP when the server refuses it", async () => {
    const { port } = await everythingOverHttp("sse");
    const kinds: string[] = [];
    const withEvents = new McpConnection({
      name: "old",
      definition: definition({ url: `http://127.0.0.1:${port}/sse` }),
      environment: {},
      onEvent: (event) => {
        if (event.type === "started") kinds.push(event.transport);
      },
    });
    connections.push(withEvents);
    await withEvents.start();
    expect(kinds).toEqual(["sse"]);
    expect(await withEvents.callTool("echo", { message: "old" })).toMatchObject({
      content: [{ text: "Echo: old" }],
    });
  });
});

describe("headers and the bearer token", () => {
  it("sends the configured headers and the token from the named variable on every transport tried", async () => {
    const seen: { method: string; headers: IncomingHttpHeaders }[] = [];
    const refusing = createServer((request, response) => {
      seen.push({ method: request.method ?? "", headers: request.headers });
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => refusing.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = refusing.address() as AddressInfo;
      const remote = connection(
        {
          url: `http://127.0.0.1:${port}/mcp`,
          headers: { "X-Team": "tools" },
          bearer_token_env: "DOCS_TOKEN",
        },
        { DOCS_TOKEN: "tok-123" },
      );
      const error = await remote.start().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(McpStartError);
      expect(error).toMatchObject({ failure: "handshake" });
      expect(seen.map((request) => request.method)).toEqual(["POST", "GET"]);
      for (const request of seen) {
        expect(request.headers.authorization).toBe("Bearer tok-123");
        expect(request.headers["x-team"]).toBe("tools");
      }
    } finally {
      refusing.close();
    }
  });

  it("refuses to connect when the token variable is not set, sending nothing", async () => {
    const remote = connection({ url: "http://127.0.0.1:9/mcp", bearer_token_env: "DOCS_TOKEN" });
    const error = await remote.start().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ failure: "spawn" });
    expect((error as Error).message).toBe(
      'MCP server "remote" could not be started: bearer_token_env names DOCS_TOKEN, which is not set in harness\'s environment',
    );
  });
});
