import type { ChildProcess } from "node:child_process";
import { request as httpRequest } from "node:http";
import { expect } from "vitest";
import { type CliResult, finished, startHarness } from "./helpers.js";
import { serveEnv } from "./mcp-serve-client.js";

/**
 * A 2025-era MCP client over Streamable HTTP written out by hand (what the official 1.x SDK,
 * the MCP Inspector and the conformance suite send): initialize with protocolVersion
 * 2025-06-18 and the capabilities it declares, keep the Mcp-Session-Id the server issues, read
 * each POST's SSE stream, answer the server's requests (elicitation/create) with a POST of
 * their response, and cancel with notifications/cancelled.
 */

export const TOKEN = "e2e-bearer-token-0123456789abcdef";
export const PROTOCOL = "2025-06-18";

export interface HttpServe {
  url: string;
  child: ChildProcess;
  stderr(): string;
  /** Stops the server (SIGTERM) and returns its exit. */
  stop(): Promise<CliResult>;
}

/** `harness mcp serve ARGS --http 127.0.0.1:0 --token-env MCP_TOKEN`, once it listens. */
export async function startHttpServe(args: readonly string[]): Promise<HttpServe> {
  const env = { ...(await serveEnv()), MCP_TOKEN: TOKEN };
  const child = startHarness(["mcp", "serve", ...args, "--http", "127.0.0.1:0", "--token-env", "MCP_TOKEN"], {
    env,
  });
  const exit = finished(child);
  let seen = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr?.on("data", (chunk: Buffer) => {
      seen += chunk.toString("utf8");
      const match = /listening on (http:\/\/\S+)/.exec(seen);
      if (match?.[1]) resolve(match[1]);
    });
    child.on("exit", () => reject(new Error(`the server exited: ${seen}`)));
  });
  return {
    url,
    child,
    stderr: () => seen,
    stop: async () => {
      child.kill("SIGTERM");
      return exit;
    },
  };
}

export type JsonRpc = {
  jsonrpc: "2.0";
  id?: number | string;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
};

/** How the client answers a server request (elicitation/create): the JSON-RPC result. */
export type Answerer = (request: JsonRpc) => Record<string, unknown>;

export class Client2025 {
  sessionId: string | undefined;
  private nextId = 1;
  /** Every request the server sent this client (elicitation/create, ...). */
  readonly serverRequests: JsonRpc[] = [];

  constructor(
    readonly url: string,
    private readonly answer: Answerer = () => ({ action: "decline" }),
  ) {}

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      authorization: `Bearer ${TOKEN}`,
      ...(this.sessionId ? { "mcp-session-id": this.sessionId, "mcp-protocol-version": PROTOCOL } : {}),
      ...extra,
    };
  }

  /** initialize + notifications/initialized; returns the initialize result. */
  async initialize(capabilities: Record<string, unknown>): Promise<JsonRpc> {
    const response = await fetch(this.url, {
      method: "POST",
      headers: this.headers(),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: this.nextId++,
        method: "initialize",
        params: { protocolVersion: PROTOCOL, capabilities, clientInfo: { name: "hand-2025", version: "1" } },
      }),
    });
    expect(response.status).toBe(200);
    this.sessionId = response.headers.get("mcp-session-id") ?? undefined;
    expect(this.sessionId).toBeTruthy();
    const [result] = await this.messages(response, () => true);
    const done = await this.notify("notifications/initialized", {});
    expect(done.status).toBe(202);
    return result!;
  }

  /** A request; its response (server requests on its stream are answered on the way). */
  request(method: string, params: Record<string, unknown>): { id: number; response: Promise<JsonRpc> } {
    const id = this.nextId++;
    const response = (async () => {
      const http = await fetch(this.url, {
        method: "POST",
        headers: this.headers(),
        body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      });
      if (!http.ok) throw new Error(`HTTP ${http.status}: ${await http.text()}`);
      const messages = await this.messages(http, (message) => message.id === id && !message.method);
      const final = messages.find((message) => message.id === id && !message.method);
      if (!final) throw new Error(`the stream of request ${id} ended without its response`);
      return final;
    })();
    return { id, response };
  }

  async call(name: string, args: Record<string, unknown>): Promise<JsonRpc> {
    return this.request("tools/call", { name, arguments: args }).response;
  }

  notify(method: string, params: Record<string, unknown>): Promise<Response> {
    return fetch(this.url, {
      method: "POST",
      headers: this.headers(),
      body: JSON.stringify({ jsonrpc: "2.0", method, params }),
    });
  }

  /** DELETE: the client ends its session. */
  end(): Promise<Response> {
    return fetch(this.url, { method: "DELETE", headers: this.headers() });
  }

  /**
   * The JSON-RPC messages of a response (one JSON body, or an SSE stream read until `last`
   * arrives or it ends), answering every server request on the way.
   */
  private async messages(response: Response, last: (message: JsonRpc) => boolean): Promise<JsonRpc[]> {
    if (!(response.headers.get("content-type") ?? "").includes("text/event-stream")) {
      const body = (await response.json()) as JsonRpc | JsonRpc[];
      return Array.isArray(body) ? body : [body];
    }
    const seen: JsonRpc[] = [];
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return seen;
      buffer += value;
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf("\n\n");
        const data = event
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).trimStart())
          .join("\n");
        if (data === "") continue;
        const message = JSON.parse(data) as JsonRpc;
        seen.push(message);
        if (message.method !== undefined && message.id !== undefined) {
          this.serverRequests.push(message);
          const reply = await fetch(this.url, {
            method: "POST",
            headers: this.headers(),
            body: JSON.stringify({ jsonrpc: "2.0", id: message.id, result: this.answer(message) }),
          });
          expect(reply.status).toBe(202);
        }
        if (last(message)) {
          await reader.cancel().catch(() => undefined);
          return seen;
        }
      }
    }
  }
}

/** The structured facts of a tools/call result (harness attaches them to governed calls). */
export function facts(message: JsonRpc): {
  session: string;
  call_id: string;
  status: string;
  error_type?: string;
} {
  return (message.result as { structuredContent: never }).structuredContent;
}

/** A raw POST through node:http, which (unlike fetch) lets a test set the Host header. */
export function rawPost(
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: target.hostname, port: target.port, path: target.pathname, method: "POST", headers },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
