import type { Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { McpConnection, McpStartError } from "../../src/mcp/connection.js";
import { definition } from "../mcp/connection-fixtures.js";
import { endlessServer } from "../support/endless-server.js";

/*
 * A remote MCP server (over HTTP) answers the handshake with a body that never ends: one JSON
 * body of a gigabyte, or an event stream whose event never completes. The SDK holds either in
 * memory; a stdio server's lines were bounded at 16 MiB, HTTP answers were not. Now both stop
 * being read past 16 MiB and the server fails to start.
 */

const SENT_MIB = 512;

const servers: Server[] = [];
const connections: McpConnection[] = [];
afterEach(async () => {
  await Promise.all(connections.splice(0).map((connection) => connection.close()));
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server that answers every request with `start` and then endless text; counts MiB written. */
async function endless(type: string, start: string): Promise<{ url: string; written: number[] }> {
  const { server, origin, written } = await endlessServer({
    status: 200,
    type,
    start,
    end: "",
    mib: SENT_MIB,
  });
  servers.push(server);
  return { url: `${origin}/mcp`, written };
}

describe("a remote MCP server's endless answer", () => {
  for (const [kind, type, start] of [
    ["a JSON body", "application/json", '{"jsonrpc":"2.0","id":0,"result":{"padding":"'],
    [
      "an event that never completes",
      "text/event-stream",
      'event: message\ndata: {"jsonrpc":"2.0","id":0,"result":"',
    ],
  ] as const) {
    it(`${kind}: reading stops past 16 MiB and the server does not start`, async () => {
      const remote = await endless(type, start);
      const connection = new McpConnection({
        name: "remote",
        // An event stream the SDK gives up on fails at the startup timeout: keep it short.
        definition: definition({ url: remote.url, startup_timeout_ms: 5_000 }),
        environment: {},
      });
      connections.push(connection);
      const error = await connection.start().then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(McpStartError);
      expect(remote.written.length).toBeGreaterThan(0);
      for (const mib of remote.written) expect(mib).toBeLessThan(64);
    }, 60_000);
  }
});
