// harness/client end to end: the package's built client against the real `harness serve`, over
// both transports, with a scripted model. What is checked is what a user of the client sees (the
// notifications, the approval asked of the handler) against what the journal holds on disk.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type * as ClientModule from "../../src/client/index.js";
import type { HarnessClient, Notification } from "../../src/client/index.js";
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

describe("harness/client against harness serve", () => {
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
