import { afterEach, describe, expect, it } from "vitest";
import { connectHttp, ErrorCode, type Notification, RpcError } from "../../src/client/index.js";
import { until } from "../support/until.js";
import { approvalNote, durable, FakeHttpServer } from "./fake.js";

let server: FakeHttpServer;
let url: string;

async function start(setup: (s: FakeHttpServer) => void = () => {}) {
  server = new FakeHttpServer();
  setup(server);
  url = await server.listen();
}

afterEach(async () => {
  await server?.close();
});

async function collect(iterable: AsyncIterable<Notification>, count: number): Promise<Notification[]> {
  const out: Notification[] = [];
  for await (const n of iterable) {
    out.push(n);
    if (out.length === count) break;
  }
  return out;
}

const seqs = (notes: Notification[]) => notes.map((n) => ("seq" in n.params ? n.params.seq : -1));

describe("connectHttp", () => {
  it("initializes on connect, then sends typed requests as POST /rpc with the bearer token", async () => {
    await start((s) => {
      s.handler = (method, params) =>
        method === "turn/start" ? { session: params.session, turn: 2 } : defaultInit(method);
    });
    const client = await connectHttp({ url, token: "secret" });
    await expect(client.startTurn("s1", "next")).resolves.toEqual({ session: "s1", turn: 2 });
    expect(server.requests.map((r) => r.method)).toEqual(["initialize", "turn/start"]);
    expect(server.requests[1]?.params).toEqual({ session: "s1", input: "next" });
    await client.close();
  });

  it("fails to connect with -32001 when the token is refused", async () => {
    await start();
    const error = await connectHttp({ url, token: "wrong" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe(ErrorCode.Unauthorized);
  });

  it("throws the server's error as an RpcError with harness's code", async () => {
    await start((s) => {
      s.handler = (method) => {
        if (method === "session/verify") {
          throw Object.assign(new Error("no session s9"), {
            code: -32002,
            data: { code: "SESSION_NOT_FOUND" },
          });
        }
        return defaultInit(method);
      };
    });
    const client = await connectHttp({ url, token: "secret" });
    const error = (await client.verify("s9").catch((e: unknown) => e)) as RpcError;
    expect([error.code, error.message, error.harnessCode]).toEqual([
      -32002,
      "no session s9",
      "SESSION_NOT_FOUND",
    ]);
    await client.close();
  });

  it("turns a result that breaks the protocol, or a body that is not JSON, into a typed error", async () => {
    await start((s) => {
      s.handler = (method) =>
        method === "session/list" ? { sessions: [{ session: 5 }] } : defaultInit(method);
    });
    const client = await connectHttp({ url, token: "secret" });
    const bad = (await client.list().catch((e: unknown) => e)) as RpcError;
    expect(bad).toBeInstanceOf(RpcError);
    expect(bad.harnessCode).toBe("PROTOCOL_VIOLATION");
    server.rawRpc = "<html>oops</html>";
    const html = (await client.verify("s1").catch((e: unknown) => e)) as RpcError;
    expect(html.harnessCode).toBe("PROTOCOL_VIOLATION");
    await client.close();
  });

  it("streams a session's events from seq 0 and resumes a dropped stream with Last-Event-ID: none lost, none twice", async () => {
    await start((s) => {
      s.notes.set(
        "s1",
        Array.from({ length: 8 }, (_, i) => durable("s1", i, "session/record")),
      );
      s.dropAfter = 3;
    });
    const client = await connectHttp({ url, token: "secret" });
    const notes = await collect(client.events("s1"), 8);
    expect(seqs(notes)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(server.eventRequests).toEqual([
      { url: "?session=s1&from_seq=0", lastEventId: undefined },
      { url: "?session=s1", lastEventId: "s1:2" },
    ]);
    expect(notes[0]).toEqual(durable("s1", 0, "session/record"));
    await client.close();
  });

  it("resumes from a given seq, and drops events a server sends again", async () => {
    await start((s) => {
      const notes = [3, 4, 4, 2, 5].map((seq) => durable("s1", seq, "session/record"));
      s.rawEvents = notes.map((n) => `id: s1:${n.params.seq}\ndata: ${JSON.stringify(n)}\n\n`).join("");
    });
    const client = await connectHttp({ url, token: "secret" });
    expect(seqs(await collect(client.events("s1", { fromSeq: 3 }), 3))).toEqual([3, 4, 5]);
    expect(server.eventRequests[0]?.url).toBe("?session=s1&from_seq=3");
    await client.close();
  });

  it("skips notifications it does not know and throws on malformed ones instead of crashing", async () => {
    await start((s) => {
      const future = { jsonrpc: "2.0", method: "session/teleported", params: { session: "s1" } };
      const good = durable("s1", 0, "session/record");
      const bad = durable("s1", 1, "turn/started"); // turn/started without turn and input
      s.rawEvents = [future, good, bad].map((n) => `data: ${JSON.stringify(n)}\n\n`).join("");
    });
    const client = await connectHttp({ url, token: "secret" });
    const seen: Notification[] = [];
    const error = await (async () => {
      for await (const n of client.events("s1")) seen.push(n);
    })().catch((e: unknown) => e);
    expect(seqs(seen)).toEqual([0]);
    expect((error as RpcError).harnessCode).toBe("PROTOCOL_VIOLATION");
    expect((error as RpcError).message).toBe(
      "the server's turn/started notification does not match the protocol",
    );

    server.rawEvents = "data: {not json\n\n";
    const notJson = await collect(client.events("s1"), 1).catch((e: unknown) => e);
    expect((notJson as RpcError).harnessCode).toBe("PROTOCOL_VIOLATION");
    await client.close();
  });

  it("ends the iterator when the caller aborts", async () => {
    await start((s) => s.notes.set("s1", [durable("s1", 0, "session/record")]));
    const client = await connectHttp({ url, token: "secret" });
    const controller = new AbortController();
    const seen: Notification[] = [];
    for await (const n of client.events("s1", { signal: controller.signal })) {
      seen.push(n);
      controller.abort();
    }
    expect(seqs(seen)).toEqual([0]);
    await client.close();
  });

  it("answers a pending approval through onApproval, and never one already decided", async () => {
    const responses: unknown[] = [];
    await start((s) => {
      s.notes.set("s1", [approvalNote("s1", 4), approvalNote("s1", 9)]);
      s.handler = (method, params) => {
        if (method === "approval/list") return { approvals: [approvalNote("s1", 9).params] };
        if (method === "approval/respond") responses.push(params);
        return defaultInit(method);
      };
    });
    const client = await connectHttp({ url, token: "secret" });
    const asked: string[] = [];
    client.onApproval(async (a) => {
      asked.push(a.approval_id);
      return "accept_session";
    });
    await collect(client.events("s1"), 2);
    await until(() => responses.length === 1);
    expect(asked).toEqual(["s1:9"]);
    expect(responses).toEqual([{ approval_id: "s1:9", decision: "accept_session" }]);
    await client.close();
  });
});

function defaultInit(method: string): unknown {
  if (method !== "initialize") return {};
  return {
    protocol_version: 1,
    server: { name: "harness", version: "0.0.0-fake" },
    identity: "default",
    capabilities: { compact: true, http: true },
  };
}
