import { describe, expect, it } from "vitest";
import { CLIENT_GONE_TEXT, ClientModel } from "../../src/mcp-server/client-model.js";
import { sessionOfUri } from "../../src/mcp-server/resources.js";
import { ServedSession } from "../../src/mcp-server/served-session.js";
import { decodeStream } from "../../src/protocol/decoder.js";
import type { ModelRequest } from "../../src/providers/provider.js";

const request = (purpose?: "compaction"): ModelRequest => ({
  messages: [],
  tools: [],
  step: 0,
  attempt: 0,
  ordinal: 0,
  ...(purpose ? { purpose } : {}),
});

describe("the MCP client in the model's place", () => {
  it("hands every call queued since the last step over as one reply, through the decoder", async () => {
    const model = new ClientModel();
    model.submit({ id: "mcp-1", name: "read_file", arguments: { path: "a.txt" } });
    model.submit({ id: "mcp-2", name: "glob", arguments: { pattern: "*" } });
    const decoded = await decodeStream(model.stream(request(), new AbortController().signal));
    expect("reply" in decoded && decoded.reply.calls).toEqual([
      { id: "mcp-1", name: "read_file", arguments: { path: "a.txt" } },
      { id: "mcp-2", name: "glob", arguments: { pattern: "*" } },
    ]);
  });

  it("waits for a call, and ends with a reply without calls when the client is gone", async () => {
    const model = new ClientModel();
    const pending = decodeStream(model.stream(request(), new AbortController().signal));
    let settled = false;
    void pending.then(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBe(false);
    model.close();
    const decoded = await pending;
    expect("reply" in decoded && decoded.reply).toMatchObject({ text: CLIENT_GONE_TEXT, calls: [] });
  });

  it("never answers a compaction request with the client's queued calls", async () => {
    const model = new ClientModel();
    model.submit({ id: "mcp-1", name: "read_file", arguments: { path: "a.txt" } });
    const summary = await decodeStream(model.stream(request("compaction"), new AbortController().signal));
    expect("reply" in summary && summary.reply.calls).toEqual([]);
    const next = await decodeStream(model.stream(request(), new AbortController().signal));
    expect("reply" in next && next.reply.calls.map((call) => call.id)).toEqual(["mcp-1"]);
  });
});

describe("the served session's approvals", () => {
  const ask = (callId: string) => ({
    callId,
    tool: "write_file",
    arguments: { path: "a.txt", content: "x" },
    effect: "local_write" as const,
    callHash: "0".repeat(64),
    subject: { kind: "path" as const, value: "a.txt" },
  });

  it("denies at once for a client without elicitation, and waits for the client's answer otherwise", async () => {
    const session = new ServedSession("s1");
    const mute = session.submit("write_file", { path: "a.txt", content: "x" }, false);
    const denied = await session.approver.request(ask(mute), new AbortController().signal);
    expect(denied).toMatchObject({ decision: "deny", by: "mcp-client" });
    expect(denied.reason).toContain("elicitation");

    const asking = session.submit("write_file", { path: "a.txt", content: "x" }, true);
    const decision = session.approver.request(ask(asking), new AbortController().signal);
    const next = await session.next(asking);
    if (next.kind !== "approval") throw new Error(`expected an approval, got ${next.kind}`);
    next.ask.answer({ decision: "allow", scope: "once", by: "mcp-client" });
    expect(await decision).toEqual({ decision: "allow", scope: "once", by: "mcp-client" });
  });

  it("denies a waiting approval, and any later one, when the client goes away", async () => {
    const session = new ServedSession("s3");
    const first = session.submit("write_file", { path: "a.txt", content: "x" }, true);
    const second = session.submit("write_file", { path: "b.txt", content: "x" }, true);
    const waiting = session.approver.request(ask(first), new AbortController().signal);
    await session.close();
    expect(await waiting).toMatchObject({ decision: "deny", reason: "the MCP client closed the connection" });
    const later = await session.approver.request(ask(second), new AbortController().signal);
    expect(later).toMatchObject({ decision: "deny", reason: "the MCP client closed the connection" });
  });

  it("denies a waiting approval when the run is cancelled", async () => {
    const session = new ServedSession("s2");
    const id = session.submit("write_file", { path: "a.txt", content: "x" }, true);
    const controller = new AbortController();
    const decision = session.approver.request(ask(id), controller.signal);
    controller.abort();
    expect(await decision).toMatchObject({ decision: "deny", reason: "cancelled" });
  });
});

describe("journal resource URIs", () => {
  it("name exactly one session, never a path", () => {
    expect(sessionOfUri("harness://sessions/20261201-000000-abcdef/events.jsonl")).toBe(
      "20261201-000000-abcdef",
    );
    for (const uri of [
      "harness://sessions/../x/events.jsonl",
      "harness://sessions/a/b/events.jsonl",
      "harness://sessions/.hidden/events.jsonl",
      "file:///etc/passwd",
      "harness://sessions/a/writer.lock",
    ]) {
      expect(sessionOfUri(uri)).toBeUndefined();
    }
  });
});

describe("replies built from many client calls", () => {
  it("stay within one reply's argument budget: the rest waits for the next step", async () => {
    const model = new ClientModel();
    const big = "x".repeat(900_000);
    for (let i = 1; i <= 6; i++)
      model.submit({ id: `mcp-${i}`, name: "write_file", arguments: { path: "a", content: big } });
    const first = await decodeStream(model.stream(request(), new AbortController().signal));
    const second = await decodeStream(model.stream(request(), new AbortController().signal));
    const ids = (decoded: typeof first) =>
      "reply" in decoded ? decoded.reply.calls.map((call) => call.id) : [];
    expect(ids(first)).toEqual(["mcp-1", "mcp-2", "mcp-3", "mcp-4"]);
    expect(ids(second)).toEqual(["mcp-5", "mcp-6"]);
    expect("reply" in first && first.reply.calls.every((call) => call.refused === undefined)).toBe(true);
  });
});
