import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  jsonSummary,
  readJournal,
  removeTempDirs,
  resultsByCall,
  workspaceWith,
} from "./helpers.js";
import { recordingScript, run, userConfig } from "./mcp-run-support.js";

/*
 * harness's MCP client against a remote server over Streamable HTTP, written here against the
 * wire so the test sees every request the client makes:
 * - a server that closes a call's event stream after an event with an id (and a `retry`), and
 *   answers on the stream the client resumes with GET and Last-Event-ID;
 * - a server that takes longer than the tool timeout but reports progress all along;
 * - a server that offers no tools at all: `run --json` still prints exactly one JSON object.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

interface Seen {
  method: string;
  rpc?: string;
  headers: IncomingMessage["headers"];
  body?: Record<string, unknown>;
  at: number;
}

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const RETRY_MS = 400;

/** The loopback server: `tools` are listed (none, and no tools capability, when empty). */
async function remote(tools: string[]): Promise<{ url: string; seen: Seen[]; streamClosedAt: number[] }> {
  const seen: Seen[] = [];
  const streamClosedAt: number[] = [];
  /** The call whose stream was closed before its answer: answered on the resumed stream. */
  let pending: { id: unknown; name: string } | undefined;
  const json = (response: ServerResponse, value: unknown, headers: Record<string, string> = {}) => {
    response.writeHead(200, { "content-type": "application/json", ...headers });
    response.end(JSON.stringify(value));
  };
  const event = (response: ServerResponse, fields: string) => response.write(`${fields}\n\n`);
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const body = text === "" ? undefined : (JSON.parse(text) as Record<string, unknown>);
    seen.push({
      method: request.method ?? "",
      ...(typeof body?.method === "string" ? { rpc: body.method } : {}),
      headers: request.headers,
      ...(body ? { body } : {}),
      at: Date.now(),
    });
    if (request.method === "GET") {
      const last = request.headers["last-event-id"];
      if (last === undefined || pending === undefined) {
        response.writeHead(405).end();
        return;
      }
      response.writeHead(200, { "content-type": "text/event-stream" });
      event(
        response,
        `id: ev-2\ndata: ${JSON.stringify({
          jsonrpc: "2.0",
          id: pending.id,
          result: { content: [{ type: "text", text: `resumed after ${last}` }] },
        })}`,
      );
      pending = undefined;
      response.end();
      return;
    }
    if (request.method === "DELETE") {
      response.writeHead(200).end();
      return;
    }
    if (body?.id === undefined) {
      response.writeHead(202).end();
      return;
    }
    const params = (body.params ?? {}) as Record<string, unknown>;
    switch (body.method) {
      case "initialize":
        json(
          response,
          {
            jsonrpc: "2.0",
            id: body.id,
            result: {
              protocolVersion: params.protocolVersion,
              capabilities: tools.length === 0 ? {} : { tools: {} },
              serverInfo: { name: "loopback", version: "1.0.0" },
            },
          },
          { "mcp-session-id": "session-1" },
        );
        return;
      case "tools/list":
        json(response, {
          jsonrpc: "2.0",
          id: body.id,
          result: { tools: tools.map((name) => ({ name, inputSchema: { type: "object" } })) },
        });
        return;
      case "tools/call": {
        const name = String(params.name);
        response.writeHead(200, { "content-type": "text/event-stream" });
        if (name === "cut") {
          // Against the transport's rules: the stream ends with neither an event id nor the answer.
          event(response, ": nothing more");
          streamClosedAt.push(Date.now());
          response.end();
          return;
        }
        if (name === "resume") {
          // An event with an id and a retry, then the stream ends without the answer.
          pending = { id: body.id, name };
          event(response, `id: ev-1\nretry: ${RETRY_MS}\ndata: `);
          streamClosedAt.push(Date.now());
          response.end();
          return;
        }
        // `slow`: 5 progress reports 300 ms apart, then the answer; `long`: 20 of them.
        const token = ((params._meta ?? {}) as Record<string, unknown>).progressToken;
        const steps = name === "long" ? 20 : 5;
        for (let step = 1; step <= steps; step += 1) {
          await new Promise((resolve) => setTimeout(resolve, 300));
          if (token !== undefined)
            event(
              response,
              `data: ${JSON.stringify({
                jsonrpc: "2.0",
                method: "notifications/progress",
                params: { progressToken: token, progress: step, total: steps },
              })}`,
            );
        }
        event(
          response,
          `data: ${JSON.stringify({ jsonrpc: "2.0", id: body.id, result: { content: [{ type: "text", text: "slow done" }] } })}`,
        );
        response.end();
        return;
      }
      default:
        json(response, { jsonrpc: "2.0", id: body.id, error: { code: -32601, message: "no such method" } });
    }
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, seen, streamClosedAt };
}

describe("harness's MCP client over Streamable HTTP", () => {
  it("resumes a call's event stream the server closed: GET with Last-Event-ID after the server's retry", async () => {
    const server = await remote(["resume"]);
    const workspace = await workspaceWith({});
    const { env } = await userConfig({
      mcp_servers: { remote: { url: server.url, transport: "streamable-http", tool_timeout_ms: 20_000 } },
    });
    const model = await recordingScript({ name: "mcp__remote__resume", arguments: {} });
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--allow", "mcp__remote__*", "--json", "go"],
      env,
    );
    expectExit(result, 0);
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    expect(resultsByCall(records).get("c1")).toMatchObject({ status: "ok", content: "resumed after ev-1" });
    const resumed = server.seen.filter((s) => s.method === "GET" && s.headers["last-event-id"] !== undefined);
    expect(resumed).toHaveLength(1);
    expect(resumed[0]!.headers["last-event-id"]).toBe("ev-1");
    expect(resumed[0]!.headers["mcp-session-id"]).toBe("session-1");
    // The server's retry was waited for before resuming.
    expect(resumed[0]!.at - server.streamClosedAt[0]!).toBeGreaterThanOrEqual(RETRY_MS - 50);
    // Nothing was sent twice: one tools/call.
    expect(server.seen.filter((s) => s.rpc === "tools/call")).toHaveLength(1);
  }, 60_000);

  it("a call whose stream ends with no event id and no answer fails at once as unknown, not at its timeout", async () => {
    const server = await remote(["cut"]);
    const workspace = await workspaceWith({});
    const { env } = await userConfig({
      mcp_servers: { remote: { url: server.url, transport: "streamable-http", tool_timeout_ms: 600_000 } },
    });
    const model = await recordingScript({ name: "mcp__remote__cut", arguments: {} });
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--allow", "mcp__remote__*", "--json", "go"],
      env,
    );
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    expect(resultsByCall(records).get("c1")).toMatchObject({
      status: "unknown",
      error_type: "MCP_OUTCOME_UNKNOWN",
    });
    expect(server.seen.filter((s) => s.rpc === "tools/call")).toHaveLength(1);
  }, 60_000);

  it("sends a progress token with each call, and progress keeps a call alive past its timeout", async () => {
    const server = await remote(["slow"]);
    const workspace = await workspaceWith({});
    const { env } = await userConfig({
      mcp_servers: { remote: { url: server.url, transport: "streamable-http", tool_timeout_ms: 700 } },
    });
    const model = await recordingScript({ name: "mcp__remote__slow", arguments: {} });
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--allow", "mcp__remote__*", "--json", "go"],
      env,
    );
    expectExit(result, 0);
    const call = server.seen.find((s) => s.rpc === "tools/call")!;
    const meta = (call.body!.params as { _meta?: { progressToken?: unknown } })._meta;
    expect(meta?.progressToken).toBeDefined();
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    expect(resultsByCall(records).get("c1")).toMatchObject({ status: "ok", content: "slow done" });
  }, 60_000);

  it("progress does not extend a call past its maximum total: ten times the tool timeout", async () => {
    const server = await remote(["long"]);
    const workspace = await workspaceWith({});
    const { env } = await userConfig({
      // 6 s of progress every 300 ms against a 400 ms timeout: the 4 s maximum total ends the call.
      mcp_servers: { remote: { url: server.url, transport: "streamable-http", tool_timeout_ms: 400 } },
    });
    const model = await recordingScript({ name: "mcp__remote__long", arguments: {} });
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--allow", "mcp__remote__*", "--json", "go"],
      env,
    );
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    const failed = resultsByCall(records).get("c1")!;
    expect(failed.status).not.toBe("ok");
    expect(JSON.stringify(failed)).toMatch(/timed out|timeout/i);
  }, 60_000);

  it("run --json prints exactly one JSON object on stdout with a server that offers no tools", async () => {
    const server = await remote([]);
    const workspace = await workspaceWith({});
    const { env } = await userConfig({
      mcp_servers: { remote: { url: server.url, transport: "streamable-http" } },
    });
    const model = await recordingScript({ name: "read_file", arguments: { path: "x" } });
    const result = await run(["run", "--workspace", workspace, "--script", model.path, "--json", "go"], env);
    expectExit(result, 0);
    const lines = result.stdout.split("\n").filter((line) => line !== "");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ status: expect.any(String) });
    // The server was never asked for tools it does not offer.
    expect(server.seen.filter((s) => s.rpc === "tools/list")).toEqual([]);
  }, 60_000);
});
