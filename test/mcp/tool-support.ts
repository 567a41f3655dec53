import { Client } from "@modelcontextprotocol/client";
import { InMemoryTransport, Server } from "@modelcontextprotocol/server";
import { McpCallError, type McpCallErrorKind, type McpCallOutcome } from "../../src/mcp/errors.js";
import type { McpCaller, McpToolListing } from "../../src/mcp/tool.js";
import type { JsonObject } from "../../src/shared/json.js";

/** A call the in-process server received. */
export interface ReceivedCall {
  name: string;
  arguments: unknown;
}

/**
 * A real MCP server (the official SDK's low-level Server) in this process, over the SDK's linked
 * in-memory transports, so tests see exactly what reached it. `answer` decides each call's result
 * as the server would send it (a CallToolResult).
 */
export async function inProcessServer(
  tools: McpToolListing[],
  answer: (call: ReceivedCall) => unknown = () => ({ content: [{ type: "text", text: "ok" }] }),
): Promise<{
  caller: McpCaller;
  listed: () => Promise<McpToolListing[]>;
  received: ReceivedCall[];
  close(): Promise<void>;
}> {
  const server = new Server({ name: "test-server", version: "1.0.0" }, { capabilities: { tools: {} } });
  const received: ReceivedCall[] = [];
  server.setRequestHandler("tools/list", async () => ({ tools: tools as never }));
  server.setRequestHandler("tools/call", async (request) => {
    const call = { name: request.params.name, arguments: request.params.arguments };
    received.push(structuredClone(call));
    return answer(call) as never;
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "harness-test", version: "1.0.0" });
  await client.connect(clientSide);
  // The same signature as the connection's callTool.
  const caller: McpCaller = {
    callTool: (name: string, args: JsonObject, options: { signal: AbortSignal; timeoutMs: number }) =>
      client.callTool({ name, arguments: args }, { signal: options.signal, timeout: options.timeoutMs }),
  };
  return {
    caller,
    listed: async () => (await client.listTools()).tools as McpToolListing[],
    received,
    close: () => client.close(),
  };
}

/** The connection's failure of a call, as a test's caller throws it. */
export class FakeCallError extends McpCallError {
  constructor(kind: McpCallErrorKind, outcome: McpCallOutcome, message = `call failed (${kind})`) {
    super(kind, outcome, message);
  }
}
