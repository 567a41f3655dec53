import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { connectHttp, connectStdio, type HarnessClient, type Notification } from "../../src/client/index.js";
import { BIN, jsonScript, ofType, readJournal, removeTempDirs, workspaceWith } from "./helpers.js";
import { serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

afterAll(removeTempDirs);

const TOKEN = "client-token-0123456789abcdef";

/** A session that asks to write a file, driven to its end by the typed client (which checks every message against the schemas). */
async function writeThrough(client: HarnessClient) {
  const workspace = await workspaceWith({});
  const script = await jsonScript([
    {
      text: "writing",
      calls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "A\n" } }],
    },
    { text: "written" },
  ]);
  const asked: string[] = [];
  client.onApproval(async (approval) => {
    asked.push(approval.tool);
    return "accept";
  });
  const { session } = await client.startSession({ workspace, goal: "write a", options: { script } });
  const seen: Notification[] = [];
  for await (const event of client.events(session, { fromSeq: 0 })) {
    seen.push(event);
    if (event.method === "turn/completed") break;
  }
  return { workspace, session, seen, asked };
}

describe("harness/client against harness serve", () => {
  it("stdio: every message passes the protocol schemas; an approval answered by onApproval; events in journal order", async () => {
    const client = await connectStdio({
      command: [process.execPath, BIN, "serve", "--stdio"],
      env: serverEnv(await serverConfig()),
    });
    try {
      const { workspace, session, seen, asked } = await writeThrough(client);
      expect(asked).toEqual(["write_file"]);
      expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("A\n");
      const journal = await readJournal(workspace, session);
      const durable = seen.filter((event) => "seq" in event.params) as { params: { seq: number } }[];
      expect(durable.map((event) => event.params.seq)).toEqual(journal.map((r) => r.seq));
      expect(ofType(journal, "approval.decided")[0]?.data.by).toBe("identity:local");
      expect((await client.verify(session)).ok).toBe(true);
    } finally {
      await client.close();
    }
  });

  it("HTTP: the same, with events over SSE", async () => {
    const server = await startHttpServer(serverEnv(await serverConfig(), { HARNESS_SERVER_TOKEN: TOKEN }));
    const client = await connectHttp({ url: server.url, token: TOKEN });
    try {
      const { workspace, session, seen, asked } = await writeThrough(client);
      expect(asked).toEqual(["write_file"]);
      expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("A\n");
      const journal = await readJournal(workspace, session);
      const durable = seen.filter((event) => "seq" in event.params) as { params: { seq: number } }[];
      expect(durable.map((event) => event.params.seq)).toEqual(journal.map((r) => r.seq));
      expect((await client.list()).map((s) => s.session)).toEqual([session]);
    } finally {
      await client.close();
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
    }
  });
});
