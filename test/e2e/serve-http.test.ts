import { readFile, writeFile } from "node:fs/promises";
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { writeReply } from "../e2e-providers/wire.js";
import {
  harness,
  jsonScript,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { methodOf, openEvents, rpc, serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

afterAll(removeTempDirs);

const TOKEN = "test-token-0123456789abcdef";

function rawGet(
  url: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(path, url), { headers }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("harness serve --http", () => {
  it("without a token configured, makes one for this run and prints the viewer's URL with it; refuses a non-loopback address", async () => {
    const config = await serverConfig();
    const env = serverEnv(config);
    delete env.HARNESS_SERVER_TOKEN;
    const server = await startHttpServer(env);
    try {
      expect(server.viewer).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}$/);
      await expect.poll(() => server.stderr()).toContain(`harness serve: viewer: ${server.viewer}\n`);
      expect((await fetch(server.viewer)).status).toBe(200);
      expect((await fetch(`${server.url}/`)).status).toBe(401);
      expect((await fetch(`${server.url}/?token=${"x".repeat(43)}`)).status).toBe(401);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    const remote = await harness(["serve", "--http", "0.0.0.0:0"]);
    expect(remote.code).toBe(64);
  });

  it("guards every route: bearer token (header or ?token=), loopback Host only, body cap; serves the page with a CSP", async () => {
    const server = await startHttpServer(serverEnv(await serverConfig(), { HARNESS_SERVER_TOKEN: TOKEN }));
    try {
      const none = await rpc(server.url, undefined, "initialize");
      expect(none.status).toBe(401);
      expect(none.body.error?.code).toBe(-32001);
      expect((await rpc(server.url, "wrong-token", "initialize")).status).toBe(401);
      const ok = await rpc(server.url, TOKEN, "initialize");
      expect(ok.status).toBe(200);
      expect(ok.body.result).toMatchObject({ identity: "default", capabilities: { http: true } });
      const port = new URL(server.url).port;
      const rebound = await rawGet(server.url, "/", {
        host: `evil.example:${port}`,
        authorization: `Bearer ${TOKEN}`,
      });
      expect(rebound.status).toBe(421);
      const page = await rawGet(server.url, `/?token=${TOKEN}`, {});
      expect(page.status).toBe(200);
      expect(String(page.headers["content-security-policy"])).toMatch(/^default-src 'none'/);
      expect((await rawGet(server.url, "/", {})).status).toBe(401);
      const big = await fetch(`${server.url}/rpc`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
        body: "x".repeat(4 * 1024 * 1024 + 1),
      });
      expect(big.status).toBe(413);
      expect(((await big.json()) as { error: { code: number } }).error.code).toBe(-32600);
      const notJson = await fetch(`${server.url}/rpc`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
        body: "{",
      });
      expect(((await notJson.json()) as { error: { code: number } }).error.code).toBe(-32700);
      const notification = await fetch(`${server.url}/rpc`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ jsonrpc: "2.0", method: "initialize", params: {} }),
      });
      expect(notification.status).toBe(204);
    } finally {
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
    }
  });

  it("a client killed mid-approval: the session waits; a new client lists it, answers, and the session finishes", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([
      { text: "", calls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "A\n" } }] },
      { text: "written" },
    ]);
    const server = await startHttpServer(serverEnv(await serverConfig(), { HARNESS_SERVER_TOKEN: TOKEN }));
    try {
      const started = await rpc(server.url, TOKEN, "session/start", {
        workspace,
        goal: "write a",
        options: { script },
      });
      const session = started.body.result?.session as string;
      const first = openEvents(server.url, TOKEN, session);
      const asked = await first.waitFor((e) => methodOf(e) === "approval/requested");
      first.close();
      const approvalId = (JSON.parse(asked.data) as { params: { approval_id: string } }).params.approval_id;
      await new Promise((resolve) => setTimeout(resolve, 300));
      const listed = await rpc(server.url, TOKEN, "approval/list", { session });
      expect(listed.body.result?.approvals).toEqual([
        expect.objectContaining({ approval_id: approvalId, tool: "write_file" }),
      ]);
      const sessions = await rpc(server.url, TOKEN, "session/list", {});
      expect(sessions.body.result?.sessions).toEqual([
        expect.objectContaining({ session, status: "awaiting_approval" }),
      ]);
      const second = openEvents(server.url, TOKEN, session, { "last-event-id": asked.id ?? "" });
      expect(
        (
          await rpc(server.url, TOKEN, "approval/respond", {
            approval_id: approvalId,
            decision: "accept_session",
          })
        ).body.result,
      ).toEqual({});
      const end = await second.waitFor((e) => methodOf(e) === "turn/completed");
      expect(JSON.parse(end.data).params.status).toBe("finished");
      // Resumed after the approval it last saw: nothing before it is sent again.
      expect(second.events.filter((e) => e.id !== undefined).map((e) => e.id)[0]).not.toBe(asked.id);
      second.close();
      expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("A\n");
      const decided = ofType(await readJournal(workspace, session), "approval.decided");
      expect(decided.map((r) => r.data)).toEqual([
        expect.objectContaining({ decision: "allow", scope: "session", by: "identity:default" }),
      ]);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  it("replays from Last-Event-ID byte for byte what the live stream sent", async () => {
    const workspace = await workspaceWith({ "f.txt": "one\n" });
    const script = await jsonScript([
      { text: "look", calls: [{ id: "r1", name: "read_file", arguments: { path: "f.txt" } }] },
      { text: "seen" },
    ]);
    const server = await startHttpServer(serverEnv(await serverConfig(), { HARNESS_SERVER_TOKEN: TOKEN }));
    try {
      const session = (await rpc(server.url, TOKEN, "session/start", { workspace, options: { script } })).body
        .result?.session as string;
      const live = openEvents(server.url, TOKEN, session);
      expect(await live.status).toBe(200);
      const turn = await rpc(server.url, TOKEN, "turn/start", { session, input: "read f" });
      expect(turn.body.result).toEqual({ session, turn: 1 });
      await live.waitFor((e) => methodOf(e) === "turn/completed");
      live.close();
      const durable = live.events.filter((e) => e.id !== undefined);
      const journal = await readJournal(workspace, session);
      expect(durable.map((e) => e.id)).toEqual(journal.map((r) => `${session}:${r.seq}`));
      const cut = durable[3]!;
      const replayed = openEvents(server.url, TOKEN, session, { "last-event-id": cut.id! });
      await replayed.waitFor((e) => methodOf(e) === "turn/completed");
      replayed.close();
      expect(replayed.events.map((e) => e.raw).join("")).toBe(
        durable
          .slice(4)
          .map((e) => e.raw)
          .join(""),
      );
      const fromSeq = openEvents(server.url, TOKEN, session, {}, "&from_seq=0");
      await fromSeq.waitFor((e) => methodOf(e) === "turn/completed");
      fromSeq.close();
      expect(fromSeq.events.map((e) => e.raw).join("")).toBe(durable.map((e) => e.raw).join(""));
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  it("identities: A cannot see B's sessions, and A's sessions never offer the tools A's catalog hides", async () => {
    const dir = await tempDir();
    const tokens = join(dir, "tokens.json");
    const alice = "alice-token-0123456789";
    const bob = "bob-token-0123456789ab";
    await writeFile(tokens, JSON.stringify({ [alice]: "alice", [bob]: "bob" }));
    const config = await serverConfig({
      // host: both set a base_url and read scripts from anywhere (server/admission.ts).
      server: {
        identities: { alice: { tools: "coding", deny: ["shell"], host: true }, bob: { host: true } },
      },
    });
    const server = await startHttpServer(serverEnv(config), ["--tokens", tokens]);
    try {
      const bobSpace = await workspaceWith({});
      const bobScript = await jsonScript([{ text: "hi" }]);
      const bobSession = (
        await rpc(server.url, bob, "session/start", {
          workspace: bobSpace,
          goal: "hello",
          options: { script: bobScript },
        })
      ).body.result?.session as string;
      const aliceSpace = await workspaceWith({});
      const aliceScript = await jsonScript([
        { text: "", calls: [{ id: "s1", name: "shell", arguments: { command: "echo hi" } }] },
        { text: "no shell" },
      ]);
      const aliceSession = (
        await rpc(server.url, alice, "session/start", {
          workspace: aliceSpace,
          goal: "use the shell",
          options: { script: aliceScript, shell: true },
        })
      ).body.result?.session as string;
      const events = openEvents(server.url, alice, aliceSession);
      await events.waitFor((e) => methodOf(e) === "turn/completed");
      events.close();
      const journal = await readJournal(aliceSpace, aliceSession);
      const header = ofType(journal, "session.started")[0];
      expect((header?.data.tools as { name: string }[] | undefined)?.map((t) => t.name)).not.toContain(
        "shell",
      );
      expect((header?.data.options as { identity?: string } | undefined)?.identity).toBe("alice");
      expect(ofType(journal, "tool.result")[0]?.data).toMatchObject({
        call_id: "s1",
        status: "invalid",
        error_type: "UNKNOWN_TOOL",
      });
      expect(ofType(journal, "process.spawned")).toEqual([]);

      expect((await rpc(server.url, alice, "session/read", { session: bobSession })).body.error?.code).toBe(
        -32002,
      );
      expect((await rpc(server.url, alice, "session/verify", { session: bobSession })).body.error?.code).toBe(
        -32002,
      );
      expect(
        (await rpc(server.url, alice, "turn/start", { session: bobSession, input: "x" })).body.error?.code,
      ).toBe(-32002);
      const aliceList = (await rpc(server.url, alice, "session/list", {})).body.result?.sessions as {
        session: string;
      }[];
      expect(aliceList.map((s) => s.session)).toEqual([aliceSession]);
      const bobList = (await rpc(server.url, bob, "session/list", {})).body.result?.sessions as {
        session: string;
      }[];
      expect(bobList.map((s) => s.session)).toEqual([bobSession]);
      expect(await openEvents(server.url, alice, bobSession).status).toBe(404);
      expect((await rpc(server.url, alice, "shutdown", {})).body.error?.code).toBe(-32004);
      expect((await rpc(server.url, bob, "session/read", { session: bobSession })).body.result?.session).toBe(
        bobSession,
      );

      // What the model was sent: a loopback Chat Completions server records each request's tools.
      const sent: { tools?: { function: { name: string } }[] }[] = [];
      const model = createServer((req, res) => {
        let body = "";
        req.setEncoding("utf8").on("data", (chunk: string) => {
          body += chunk;
        });
        req.on("end", () => {
          sent.push(JSON.parse(body));
          const wire = writeReply("chat", { kind: "text", text: "hello" });
          res.writeHead(wire.status, wire.headers);
          res.end("body" in wire ? wire.body : "");
        });
      });
      await new Promise<void>((resolve) => model.listen(0, "127.0.0.1", resolve));
      try {
        const base_url = `http://127.0.0.1:${(model.address() as AddressInfo).port}/v1`;
        const options = { provider: "openai-compatible", model: "m", base_url, shell: true };
        const asAlice = (
          await rpc(server.url, alice, "session/start", { workspace: aliceSpace, goal: "hi", options })
        ).body.result?.session as string;
        const asBob = (
          await rpc(server.url, bob, "session/start", { workspace: bobSpace, goal: "hi", options })
        ).body.result?.session as string;
        for (const [session, token] of [
          [asAlice, alice],
          [asBob, bob],
        ] as const) {
          const stream = openEvents(server.url, token, session);
          await stream.waitFor((e) => methodOf(e) === "turn/completed");
          stream.close();
        }
        const names = sent.map((request) => (request.tools ?? []).map((tool) => tool.function.name).sort());
        expect(names).toHaveLength(2);
        // One request per session; alice's lacks shell, bob's (no policy) has it.
        expect(names.filter((list) => !list.includes("shell"))).toEqual([
          ["batch", "edit_file", "glob", "grep", "read_artifact", "read_file", "web_fetch", "write_file"],
        ]);
        expect(names.filter((list) => list.includes("shell"))).toHaveLength(1);
      } finally {
        await new Promise((resolve) => model.close(resolve));
      }
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });
});
