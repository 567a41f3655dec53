import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { encodeLine } from "../../src/api/index.js";
import { connectStdio, connectStreams, type Notification, RpcError } from "../../src/client/index.js";
import { until } from "../support/until.js";
import { approvalNote, durable, FakeStreamServer, NO_ANSWER } from "./fake.js";

const seqs = (notes: Notification[]) => notes.map((n) => ("seq" in n.params ? n.params.seq : -1));

async function collect(iterable: AsyncIterable<Notification>, count: number): Promise<Notification[]> {
  const out: Notification[] = [];
  for await (const n of iterable) {
    out.push(n);
    if (out.length === count) break;
  }
  return out;
}

describe("connectStreams", () => {
  it("matches responses to requests by id, whatever order they come back in", async () => {
    const server = new FakeStreamServer();
    server.handler = (method) => (method === "session/fork" ? NO_ANSWER : { summary: "short" });
    const client = connectStreams(server.clientInput, server.clientOutput);
    const fork = client.fork("s1", 3);
    const compact = client.compact("s1");
    await expect(compact).resolves.toEqual({ summary: "short" });
    const forkId = server.requests.find((r) => r.method === "session/fork")?.id;
    server.send(encodeLine({ jsonrpc: "2.0", id: forkId, result: { session: "s2" } }));
    await expect(fork).resolves.toEqual({ session: "s2" });
    expect(server.requests.map((r) => [r.method, r.params])).toEqual([
      ["session/fork", { session: "s1", at_seq: 3 }],
      ["session/compact", { session: "s1" }],
    ]);
  });

  it("subscribes from seq 0 and delivers in journal order, once, when live events overtake the replay", async () => {
    const server = new FakeStreamServer();
    server.after = (method, params) => {
      if (method !== "session/subscribe") return;
      expect(params).toEqual({ session: "s1", from_seq: 0 });
      // live 4 and 5 arrive before the replay of 0..4 (4 twice)
      for (const seq of [4, 5, 0, 1, 2, 3, 4]) server.notify(durable("s1", seq, "session/record"));
      server.notify(durable("s2", 6, "session/record")); // another session's: not ours
      server.notify({
        jsonrpc: "2.0",
        method: "item/delta",
        params: { session: "s1", item_id: "model:2", kind: "text", text: "a\u2028b" },
      });
    };
    const client = connectStreams(server.clientInput, server.clientOutput);
    const notes = await collect(client.events("s1"), 7);
    expect(seqs(notes)).toEqual([0, 1, 2, 3, 4, 5, -1]);
    const delta = notes.find((n) => n.method === "item/delta");
    expect(delta?.params).toEqual({ session: "s1", item_id: "model:2", kind: "text", text: "a\u2028b" });
  });

  it("throws a typed error from the iterator on a line that is not JSON, and pending requests still complete", async () => {
    const server = new FakeStreamServer();
    server.handler = (method) => (method === "session/verify" ? NO_ANSWER : {});
    server.after = (method) => {
      if (method === "session/subscribe") server.send("this is not json\n");
    };
    const client = connectStreams(server.clientInput, server.clientOutput);
    const verify = client.verify("s1");
    const error = (await collect(client.events("s1"), 1).catch((e: unknown) => e)) as RpcError;
    expect(error).toBeInstanceOf(RpcError);
    expect(error.harnessCode).toBe("PROTOCOL_VIOLATION");
    const id = server.requests.find((r) => r.method === "session/verify")?.id;
    server.send(
      encodeLine({
        jsonrpc: "2.0",
        id,
        result: { session: "s1", ok: true, records: 3, head_hash: "ab", problems: [] },
      }),
    );
    await expect(verify).resolves.toMatchObject({ ok: true, records: 3 });
  });

  it("rejects pending requests and ends iterators with CONNECTION_CLOSED when the server's stream ends", async () => {
    const server = new FakeStreamServer();
    server.handler = (method) => (method === "turn/interrupt" ? NO_ANSWER : {});
    const client = connectStreams(server.clientInput, server.clientOutput);
    const events = collect(client.events("s1"), 5).catch((e: unknown) => e);
    const interrupt = client.interrupt("s1").catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 20));
    server.clientInput.end();
    expect(((await interrupt) as RpcError).harnessCode).toBe("CONNECTION_CLOSED");
    expect(((await events) as RpcError).harnessCode).toBe("CONNECTION_CLOSED");
    expect(((await client.verify("s1").catch((e: unknown) => e)) as RpcError).harnessCode).toBe(
      "CONNECTION_CLOSED",
    );
  });

  it("answers approvals of every session on the connection through onApproval, once each", async () => {
    const server = new FakeStreamServer();
    const responded: unknown[] = [];
    server.handler = (method, params) => {
      if (method === "approval/list") return { approvals: [approvalNote("s7", 12).params] };
      if (method === "approval/respond") responded.push(params);
      return {};
    };
    const client = connectStreams(server.clientInput, server.clientOutput);
    const asked: unknown[] = [];
    client.onApproval(async (a) => {
      asked.push([a.approval_id, a.tool, a.arguments]);
      return "decline";
    });
    server.notify(approvalNote("s7", 12));
    server.notify(approvalNote("s7", 12));
    await until(() => responded.length === 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(asked).toEqual([["s7:12", "write_file", { path: "a.txt" }]]);
    expect(responded).toEqual([{ approval_id: "s7:12", decision: "decline" }]);
  });
});

describe("connectStdio", () => {
  const fake = fileURLToPath(new URL("./fake-stdio-server.mjs", import.meta.url));

  it("spawns the server, initializes, and on close asks it to shut down and waits for it", async () => {
    const client = await connectStdio({ command: [process.execPath, fake] });
    await expect(client.startSession({ workspace: "/tmp/w", goal: "go" })).resolves.toEqual({
      session: "s-1",
      status: "running",
    });
    await client.close();
    const after = (await client.list().catch((e: unknown) => e)) as RpcError;
    expect(after.harnessCode).toBe("CONNECTION_CLOSED");
  });

  it("says why when the server dies mid-request, with the end of its stderr", async () => {
    const client = await connectStdio({ command: [process.execPath, fake] });
    const error = (await client
      .startSession({ workspace: "/tmp/w", goal: "crash" })
      .catch((e: unknown) => e)) as RpcError;
    expect(error.harnessCode).toBe("CONNECTION_CLOSED");
    expect(error.message).toMatch(/the server (exited \(exit code 3\)|closed the connection)/);
    await client.close();
  });

  it("fails to connect with CONNECTION_FAILED when the command cannot start", async () => {
    const error = (await connectStdio({ command: ["/nonexistent/harness"] }).catch(
      (e: unknown) => e,
    )) as RpcError;
    expect(error).toBeInstanceOf(RpcError);
    expect(error.harnessCode).toBe("CONNECTION_FAILED");
  });
});

describe("the client's own checks", () => {
  it("refuses params the protocol does not allow before sending anything", async () => {
    const server = new FakeStreamServer();
    const client = connectStreams(server.clientInput, server.clientOutput);
    const untyped = client.request as (method: string, params: unknown) => Promise<unknown>;
    const typo = (await untyped("session/start", { workspace: "/w", optoins: {} }).catch(
      (e: unknown) => e,
    )) as RpcError;
    expect([typo.code, typo.message]).toEqual([-32602, "invalid params for session/start"]);
    const unknown = (await untyped("session/explode", {}).catch((e: unknown) => e)) as RpcError;
    expect(unknown.code).toBe(-32601);
    expect(((await untyped("toString", {}).catch((e: unknown) => e)) as RpcError).code).toBe(-32601);
    expect(server.requests).toEqual([]);
  });
});
