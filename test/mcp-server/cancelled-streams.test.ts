import type { JSONRPCMessage, RequestId } from "@modelcontextprotocol/server";
import { describe, expect, it } from "vitest";
import { closeCancelledStreams } from "../../src/mcp-server/http-sessions.js";

/** A stand-in for the SDK's session transport: what reached the server, which streams were closed. */
function transport() {
  const delivered: JSONRPCMessage[] = [];
  const closed: RequestId[] = [];
  const fake = {
    onmessage: (message: JSONRPCMessage, _extra?: unknown) => {
      delivered.push(message);
    },
    send: async (_message: JSONRPCMessage) => undefined,
    closeSSEStream: (id: RequestId) => {
      closed.push(id);
    },
  };
  closeCancelledStreams(fake as never);
  const post = (messages: JSONRPCMessage[]) => {
    const request = new Request("http://127.0.0.1/", { method: "POST" });
    for (const message of messages) fake.onmessage?.(message, { request } as never);
  };
  return { fake, delivered, closed, post };
}

const call = (id: RequestId): JSONRPCMessage => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "shell", arguments: {} },
});
const cancel = (requestId: unknown): JSONRPCMessage =>
  ({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId } }) as JSONRPCMessage;

describe("the stream of a request the client cancelled", () => {
  it("is closed once the cancellation has reached the server", () => {
    const t = transport();
    t.post([call(7)]);
    t.post([cancel(7)]);
    expect(t.delivered.map((m) => ("method" in m ? m.method : "response"))).toEqual([
      "tools/call",
      "notifications/cancelled",
    ]);
    expect(t.closed).toEqual([7]);
  });

  it("waits, in a batch, until the other requests of the same POST are answered", async () => {
    const t = transport();
    t.post([call("a"), call("b")]);
    t.post([cancel("a")]);
    expect(t.closed).toEqual([]);
    // Once the other one is answered, nothing else will be sent on that stream.
    await t.fake.send({ jsonrpc: "2.0", id: "b", result: {} } as JSONRPCMessage);
    expect(t.closed).toEqual(["b"]);
    // A batch none of whose requests was cancelled is left to the SDK (it ends with the last answer).
    t.post([call("c"), call("d")]);
    await t.fake.send({ jsonrpc: "2.0", id: "c", result: {} } as JSONRPCMessage);
    await t.fake.send({ jsonrpc: "2.0", id: "d", result: {} } as JSONRPCMessage);
    expect(t.closed).toEqual(["b"]);
  });

  it("closes nothing for a request it never saw, one already answered, or a malformed id", async () => {
    const t = transport();
    t.post([call(1)]);
    await t.fake.send({ jsonrpc: "2.0", id: 1, result: {} } as JSONRPCMessage);
    for (const id of [1, 2, "1", null, { id: 1 }, undefined]) t.post([cancel(id)]);
    expect(t.closed).toEqual([]);
    // Every message still reached the server.
    expect(t.delivered).toHaveLength(7);
  });
});
