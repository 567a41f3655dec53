import { writeFile } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, removeTempDirs, tempDir } from "./helpers.js";
import { methodOf, openEvents, rpc, serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

afterAll(removeTempDirs);

const TOKEN = "owner-token-0123456789ab";
/** Past the server's cap of open event streams per identity (64). */
const DROPPERS = 150;

function eventsRequest(url: string, session: string, headers: Record<string, string> = {}): string {
  const { host } = new URL(url);
  const lines = [
    `GET /events?session=${encodeURIComponent(session)} HTTP/1.1`,
    `Host: ${host}`,
    `Authorization: Bearer ${TOKEN}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join("\r\n")}\r\n\r\n`;
}

function socketTo(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket));
    socket.on("error", reject);
  });
}

/** The server's stderr once it contains `text`. */
function stderrContains(child: Awaited<ReturnType<typeof startHttpServer>>, text: string): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (!child.stderr().includes(text)) return;
      child.child.stderr?.off("data", check);
      resolve();
    };
    child.child.stderr?.on("data", check);
    check();
  });
}

describe("attack: serve --http event streams from clients that leave early or never read", () => {
  let ws: string;
  let server: Awaited<ReturnType<typeof startHttpServer>>;

  beforeAll(async () => {
    ensureBuilt();
    ws = await tempDir("harness-streams-");
    await writeFile(join(ws, "replies.json"), JSON.stringify({ replies: [{ text: "done" }] }));
    // One reply of 2,000,000 characters in 200,000 deltas: about 30 MiB of events.
    await writeFile(
      join(ws, "flood.mjs"),
      [
        "export default function* () {",
        '  for (let i = 0; i < 200000; i++) yield { type: "text_delta", text: "0123456789" };',
        '  yield { type: "end", reason: "stop" };',
        "}",
      ].join("\n"),
    );
    server = await startHttpServer(serverEnv(await serverConfig(), { HARNESS_SERVER_TOKEN: TOKEN }));
  });

  afterAll(async () => {
    server.child.kill("SIGTERM");
    await server.exited;
  });

  it("clients that leave before their subscription is set up give their slot back: a normal client still gets its stream", async () => {
    const started = await rpc(server.url, TOKEN, "session/start", {
      workspace: ws,
      goal: "say done",
      options: { script: join(ws, "replies.json") },
    });
    const session = started.body.result?.session as string;
    expect(session, JSON.stringify(started.body)).toBeTruthy();
    const first = openEvents(server.url, TOKEN, session);
    await first.waitFor((e) => methodOf(e) === "turn/completed");
    first.close();

    // Each sends its request and its end at once, and waits for the server to close its side:
    // the server took the slot on the request and saw the client leave while it subscribed.
    for (let batch = 0; batch < DROPPERS; batch += 25) {
      await Promise.all(
        Array.from({ length: 25 }, async () => {
          const socket = await socketTo(server.url);
          socket.resume();
          const closed = new Promise((resolve) => socket.on("close", resolve));
          socket.end(eventsRequest(server.url, session));
          await closed;
        }),
      );
    }

    const after = openEvents(server.url, TOKEN, session);
    expect(await after.status).toBe(200);
    await after.waitFor((e) => methodOf(e) === "turn/completed");
    after.close();
  });

  it("a reader that never reads is dropped (its connection closed) instead of buffered without bound, and resumes with Last-Event-ID", async () => {
    const started = await rpc(server.url, TOKEN, "session/start", {
      workspace: ws,
      options: { script: join(ws, "flood.mjs") },
    });
    const session = started.body.result?.session as string;
    expect(session, JSON.stringify(started.body)).toBeTruthy();

    // It reads the response's head and first event, then never reads again.
    const slow = await socketTo(server.url);
    slow.on("error", () => {});
    let received = "";
    let reading = true;
    let headSeen: () => void = () => {};
    const head = new Promise<void>((resolve) => {
      headSeen = resolve;
    });
    const firstEvent = new Promise<void>((resolve) => {
      slow.setEncoding("utf8").on("data", (chunk: string) => {
        if (!reading) return;
        received += chunk;
        if (received.includes("\r\n\r\n")) headSeen();
        if (!/^id: /m.test(received)) return;
        reading = false;
        slow.pause();
        resolve();
      });
    });
    const closed = new Promise<void>((resolve) => slow.on("close", () => resolve()));
    slow.write(eventsRequest(server.url, session));
    // The flood starts only once the head is here: the server sends it once the stream's
    // subscription is set up, so every event of the turn is offered to this reader. (Started
    // before, a loaded server could still be setting the subscription up while the deltas came,
    // and drop the stream before its head was sent: the reader would never see a byte.)
    await Promise.race([head, closed]);
    expect(received.startsWith("HTTP/1.1 200"), received).toBe(true);
    const dropped = stderrContains(server, `dropped an event stream of session ${JSON.stringify(session)}`);
    const turn = await rpc(server.url, TOKEN, "turn/start", { session, input: "flood" });
    expect(turn.body.error, JSON.stringify(turn.body)).toBeUndefined();
    await firstEvent;
    await dropped;
    // The server ended the connection: taking what is still in flight, the reader meets its end.
    slow.resume();
    await closed;
    expect(received.startsWith("HTTP/1.1 200")).toBe(true);
    const ids = [...received.matchAll(/^id: (\S+):(\d+)$/gm)].map((m) => Number(m[2]));
    const last = Math.max(...ids);

    const resumed = openEvents(server.url, TOKEN, session, { "last-event-id": `${session}:${last}` });
    expect(await resumed.status).toBe(200);
    const completed = await resumed.waitFor((e) => methodOf(e) === "turn/completed", 60_000);
    resumed.close();
    const firstId = resumed.events.find((e) => e.id !== undefined)?.id;
    expect(firstId).toBe(`${session}:${last + 1}`);
    expect(JSON.parse(completed.data).params.status).toBe("finished");
  }, 120_000); // a turn of ~30 MiB of journaled events: far slower on a loaded machine than alone
});
