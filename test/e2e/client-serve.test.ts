// harness/client end to end: the package's built client against the real `harness serve`, over
// both transports, with a scripted model. What is checked is what a user of the client sees (the
// notifications, the approval asked of the handler) against what the journal holds on disk.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type * as ClientModule from "../../src/client/index.js";
import type { HarnessClient, Notification, RpcError } from "../../src/client/index.js";
import { jsonScript, ofType, REPO_ROOT, readJournal, removeTempDirs, workspaceWith } from "./helpers.js";
import { serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

afterAll(removeTempDirs);

const TOKEN = "client-token-0123456789abcdef";

/** The client as the package exports it (`harness/client` is dist/src/client/index.js). */
async function builtClient(): Promise<typeof ClientModule> {
  return (await import(join(REPO_ROOT, "dist/src/client/index.js"))) as typeof ClientModule;
}

const seqOf = (n: Notification) => ("seq" in n.params ? n.params.seq : undefined);

/** The session's notifications until (and with) its first turn/completed; transient ones left out. */
async function untilTurnCompleted(
  client: HarnessClient,
  session: string,
  fromSeq?: number,
): Promise<Notification[]> {
  const out: Notification[] = [];
  const events = client.events(session, fromSeq === undefined ? {} : { fromSeq });
  for await (const n of events) {
    if (seqOf(n) !== undefined) out.push(n);
    if (n.method === "turn/completed") break;
  }
  return out;
}

async function scriptedWrite(): Promise<{ workspace: string; script: string }> {
  const workspace = await workspaceWith({ "notes.txt": "draft\n" });
  const script = await jsonScript([
    { text: "reading", calls: [{ id: "r1", name: "read_file", arguments: { path: "notes.txt" } }] },
    {
      text: "writing",
      calls: [{ id: "w1", name: "write_file", arguments: { path: "out.txt", content: "done\n" } }],
    },
    { text: "all done" },
  ]);
  return { workspace, script };
}

/**
 * One full turn through `client`: the write is asked of the onApproval handler and accepted; the
 * live notifications are every journal record once, in order; a replay from a seq equals them.
 */
async function fullTurn(client: HarnessClient, identity: string): Promise<void> {
  const { workspace, script } = await scriptedWrite();
  const asked: unknown[] = [];
  const stop = client.onApproval(async (a) => {
    asked.push({ tool: a.tool, call_id: a.call_id, arguments: a.arguments });
    return "accept";
  });
  const { session } = await client.startSession({ workspace, goal: "copy the notes", options: { script } });
  const live = await untilTurnCompleted(client, session);
  stop();

  expect(asked).toEqual([
    { tool: "write_file", call_id: "w1", arguments: { path: "out.txt", content: "done\n" } },
  ]);
  expect(await readFile(join(workspace, "out.txt"), "utf8")).toBe("done\n");
  const journal = await readJournal(workspace, session);
  expect(ofType(journal, "approval.decided")).toEqual([
    expect.objectContaining({
      data: expect.objectContaining({ decision: "allow", by: `identity:${identity}` }),
    }),
  ]);
  expect(live.map(seqOf)).toEqual(journal.map((r) => r.seq));
  expect(live.map((n) => ("record" in n.params ? n.params.record : undefined))).toEqual(journal);
  const last = live.at(-1);
  expect(last?.method === "turn/completed" && last.params.status).toBe("finished");
  expect(live.filter((n) => n.method === "approval/resolved").map((n) => n.params)).toEqual([
    expect.objectContaining({ decision: "allow", by: `identity:${identity}` }),
  ]);

  // Resumed from a seq: exactly the live notifications from there on, byte for byte.
  const from = 4;
  const replay = await untilTurnCompleted(client, session, from);
  expect(replay.map((n) => JSON.stringify(n))).toEqual(
    live.filter((n) => (seqOf(n) ?? -1) >= from).map((n) => JSON.stringify(n)),
  );
  await expect(client.verify(session)).resolves.toMatchObject({
    ok: true,
    records: journal.length,
    problems: [],
  });
  expect((await client.list()).map((s) => s.session)).toContain(session);
}

/** Poll the journal until `done` holds (the client under test reads no events). */
async function journalUntil(
  workspace: string,
  session: string,
  done: (journal: Awaited<ReturnType<typeof readJournal>>) => boolean,
): Promise<Awaited<ReturnType<typeof readJournal>>> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const journal = await readJournal(workspace, session).catch(() => []);
    if (done(journal)) return journal;
    if (Date.now() > deadline)
      throw new Error(`journal of ${session}: ${JSON.stringify(journal.map((r) => r.type))}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const writeReply = (id: string, path: string) => ({
  text: "",
  calls: [{ id, name: "write_file", arguments: { path, content: `${id}\n` } }],
});

/**
 * Over one transport: (1) a session started by a client with onApproval, whose events() it never
 * reads, has its approval answered by the handler; (2) on a server that does not host it, turn/start
 * names the session/start to call (with the workspace), and after that call the turn runs, its
 * approval answered too. `connect` gives a client of a new server each time; `close` ends both.
 */
async function approvalsAndReopen(
  connect: () => Promise<{ client: HarnessClient; close: () => Promise<void> }>,
  identity: string,
): Promise<void> {
  const workspace = await workspaceWith({});
  const script = await jsonScript([
    writeReply("w1", "one.txt"),
    { text: "one" },
    writeReply("w2", "two.txt"),
    { text: "two" },
  ]);
  const asked: string[] = [];
  const handler = async (a: { call_id: string }) => {
    asked.push(a.call_id);
    return "accept" as const;
  };

  const first = await connect();
  let session: string;
  try {
    first.client.onApproval(handler);
    ({ session } = await first.client.startSession({ workspace, goal: "write one", options: { script } }));
    await journalUntil(workspace, session, (j) => ofType(j, "run.finished").length === 1);
  } finally {
    await first.close();
  }
  expect(asked).toEqual(["w1"]);
  expect(await readFile(join(workspace, "one.txt"), "utf8")).toBe("w1\n");

  const second = await connect();
  try {
    const { client } = second;
    client.onApproval(handler);
    // A session this server has never seen, in no workspace it knows: not found, and what to call.
    const unknown = (await client.startTurn("never-recorded", "hi").catch((e: unknown) => e)) as RpcError;
    expect(unknown.harnessCode).toBe("SESSION_NOT_FOUND");
    expect(unknown.message).toContain(
      'open a recorded one with session/start {"workspace": DIR, "session": "never-recorded"}',
    );
    // The server learns the workspace (session/list); turn/start then names the exact call.
    expect((await client.list(workspace)).map((s) => s.session)).toEqual([session]);
    const refused = (await client.startTurn(session, "write two").catch((e: unknown) => e)) as RpcError;
    expect(refused.harnessCode).toBe("SESSION_NOT_OPEN");
    const call = { method: "session/start", params: { workspace, session } };
    expect(refused.data).toMatchObject({ workspace, session, call });
    expect(refused.message).toContain(`call session/start ${JSON.stringify(call.params)}`);
    expect(ofType(await readJournal(workspace, session), "user.input")).toHaveLength(1);

    await client.request("session/start", { ...call.params, options: { script } });
    await expect(client.startTurn(session, "write two")).resolves.toEqual({ session, turn: 2 });
    const journal = await journalUntil(workspace, session, (j) => ofType(j, "run.finished").length === 2);
    expect(ofType(journal, "user.input").map((r) => [r.data.turn, r.data.text])).toEqual([
      [1, "write one"],
      [2, "write two"],
    ]);
    expect(
      ofType(journal, "approval.decided").map((r) => [r.data.call_id, r.data.decision, r.data.by]),
    ).toEqual([
      ["w1", "allow", `identity:${identity}`],
      ["w2", "allow", `identity:${identity}`],
    ]);
  } finally {
    await second.close();
  }
  expect(asked).toEqual(["w1", "w2"]);
  expect(await readFile(join(workspace, "two.txt"), "utf8")).toBe("w2\n");
}

describe("harness/client against harness serve", () => {
  it("over stdio: onApproval answers a started session's approvals without events(); turn/start on a session not open names session/start", async () => {
    const { connectStdio } = await builtClient();
    const env = serverEnv(await serverConfig());
    await approvalsAndReopen(async () => {
      const client = await connectStdio({ env });
      return { client, close: () => client.close() };
    }, "local");
  });

  it("over HTTP: onApproval answers a started session's approvals without events(); turn/start on a session not open names session/start", async () => {
    const { connectHttp } = await builtClient();
    const env = serverEnv(await serverConfig(), { HARNESS_SERVER_TOKEN: TOKEN });
    await approvalsAndReopen(async () => {
      const server = await startHttpServer(env);
      const client = await connectHttp({ url: server.url, token: TOKEN });
      return {
        client,
        close: async () => {
          await client.close();
          server.child.kill("SIGTERM");
          await server.exited;
        },
      };
    }, "default");
  });

  it("over HTTP: a turn started in another client's session is followed by this client's onApproval; with the handler removed, approvals wait", async () => {
    const { connectHttp } = await builtClient();
    const server = await startHttpServer(serverEnv(await serverConfig(), { HARNESS_SERVER_TOKEN: TOKEN }));
    try {
      const owner = await connectHttp({ url: server.url, token: TOKEN });
      /** The helper's event streams, by the signal that ends each. */
      const streams: AbortSignal[] = [];
      const counting: typeof fetch = (input, init) => {
        if (String(input).includes("/events") && init?.signal) streams.push(init.signal);
        return fetch(input, init);
      };
      const helper = await connectHttp({ url: server.url, token: TOKEN, fetch: counting });
      const workspace = await workspaceWith({});
      const script = await jsonScript([
        writeReply("w1", "one.txt"),
        { text: "one" },
        writeReply("w2", "two.txt"),
        { text: "two" },
      ]);
      const { session } = await owner.startSession({ workspace, options: { script } });
      const asked: string[] = [];
      const stop = helper.onApproval(async (a) => {
        asked.push(a.call_id);
        return "accept";
      });
      await helper.startTurn(session, "write one");
      await journalUntil(workspace, session, (j) => ofType(j, "run.finished").length === 1);
      expect(asked).toEqual(["w1"]);
      // The watch closed its stream once the session was at rest (the server caps open streams).
      expect(streams).toHaveLength(1);
      for (let waited = 0; !streams.every((signal) => signal.aborted) && waited < 5000; waited += 50)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(streams.map((signal) => signal.aborted)).toEqual([true]);

      stop();
      await helper.startTurn(session, "write two");
      await journalUntil(workspace, session, (j) => ofType(j, "approval.requested").length === 2);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(asked).toEqual(["w1"]);
      expect(streams).toHaveLength(1);
      const waiting = await owner.listApprovals(session);
      expect(waiting.map((a) => a.call_id)).toEqual(["w2"]);
      const journal = await readJournal(workspace, session);
      expect(ofType(journal, "approval.decided").map((r) => [r.data.call_id, r.data.by])).toEqual([
        ["w1", "identity:default"],
      ]);
      await owner.respond(String(waiting[0]?.approval_id), "decline");
      await journalUntil(workspace, session, (j) => ofType(j, "run.finished").length === 2);
      await owner.close();
      await helper.close();
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  it("over stdio (connectStdio's default command: this package's harness serve --stdio): a full turn, an approval, a replay", async () => {
    const { connectStdio } = await builtClient();
    const client = await connectStdio({ env: serverEnv(await serverConfig()) });
    try {
      await fullTurn(client, "local");
    } finally {
      await client.close();
    }
  });

  it("over HTTP: a full turn, an approval, a replay", async () => {
    const { connectHttp } = await builtClient();
    const server = await startHttpServer(serverEnv(await serverConfig(), { HARNESS_SERVER_TOKEN: TOKEN }));
    try {
      const client = await connectHttp({ url: server.url, token: TOKEN });
      await fullTurn(client, "default");
      await client.close();
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  it("over HTTP: a stream dropped mid-session is resumed with Last-Event-ID, nothing lost or repeated", async () => {
    const { connectHttp } = await builtClient();
    const server = await startHttpServer(serverEnv(await serverConfig(), { HARNESS_SERVER_TOKEN: TOKEN }));
    const seen: { lastEventId: string | null; url: string }[] = [];
    /** Cuts the first event stream after its third event, as a network would. */
    const dropping: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const url = String(input);
      if (!url.includes("/events")) return response;
      seen.push({
        url: url.slice(url.indexOf("?")),
        lastEventId: new Headers(init?.headers).get("last-event-id"),
      });
      if (seen.length > 1 || response.body === null) return response;
      const reader = response.body.getReader();
      let events = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const { value, done } = await reader.read();
          if (done) return controller.close();
          const text = new TextDecoder().decode(value);
          let cut = -1;
          for (let at = text.indexOf("\n\n"); at !== -1 && cut === -1; at = text.indexOf("\n\n", at + 2)) {
            if (!text.slice(0, at).split("\n\n").at(-1)?.startsWith(":") && ++events === 3) cut = at + 2;
          }
          if (cut === -1) return controller.enqueue(value);
          controller.enqueue(new TextEncoder().encode(text.slice(0, cut)));
          await reader.cancel();
          controller.error(new Error("connection reset"));
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };
    try {
      const client = await connectHttp({ url: server.url, token: TOKEN, fetch: dropping });
      const { workspace } = await scriptedWrite();
      const script = await jsonScript([
        { text: "reading", calls: [{ id: "r1", name: "read_file", arguments: { path: "notes.txt" } }] },
        { text: "done" },
      ]);
      const { session } = await client.startSession({ workspace, goal: "read", options: { script } });
      const live = await untilTurnCompleted(client, session);
      const journal = await readJournal(workspace, session);
      expect(live.map(seqOf)).toEqual(journal.map((r) => r.seq));
      expect(seen).toEqual([
        { url: `?session=${session}&from_seq=0`, lastEventId: null },
        { url: `?session=${session}`, lastEventId: `${session}:2` },
      ]);
      await client.close();
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });
});
