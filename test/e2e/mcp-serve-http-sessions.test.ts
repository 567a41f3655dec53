import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive, eventually, processesWith } from "../support/processes.js";
import {
  ensureBuilt,
  expectExit,
  finished,
  readJournal,
  removeTempDirs,
  sessionIds,
  startHarness,
  workspaceWith,
} from "./helpers.js";
import { Client2025, facts, PROTOCOL, rawPost, startHttpServe, TOKEN } from "./mcp-http-2025-client.js";
import { serveEnv } from "./mcp-serve-client.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("harness mcp serve --http: a 2025-era client has a session of its own", () => {
  it("asks the client that declared elicitation on the call's own stream: accepted runs the call, declined writes nothing", async () => {
    const workspace = await workspaceWith({});
    const serve = await startHttpServe(["-w", workspace, "--write", "ask"]);
    try {
      const yes = new Client2025(serve.url, () => ({ action: "accept", content: { approve: true } }));
      await yes.initialize({ elicitation: {} });
      const approved = await yes.call("write_file", { path: "yes.txt", content: "approved\n" });
      expect(yes.serverRequests.map((request) => request.method)).toEqual(["elicitation/create"]);
      expect(String(yes.serverRequests[0]!.params!.message)).toContain("yes.txt");
      expect(facts(approved).status).toBe("ok");
      expect(await readFile(join(workspace, "yes.txt"), "utf8")).toBe("approved\n");
      const yesJournal = await readJournal(workspace, facts(approved).session);
      expect(yesJournal.filter((r) => r.type === "approval.decided").map((r) => r.data.decision)).toEqual([
        "allow",
      ]);

      const no = new Client2025(serve.url, () => ({ action: "decline" }));
      await no.initialize({ elicitation: {} });
      const declined = await no.call("write_file", { path: "no.txt", content: "declined\n" });
      expect(no.serverRequests.map((request) => request.method)).toEqual(["elicitation/create"]);
      expect(facts(declined)).toMatchObject({ status: "denied", error_type: "USER_DENIED" });
      expect(existsSync(join(workspace, "no.txt"))).toBe(false);
      // Each client's calls are journaled in its own session.
      expect(facts(declined).session).not.toBe(facts(approved).session);
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });

  it("stops a cancelled call: its process tree is killed, its result is journaled cancelled, and its late write never happens", async () => {
    const workspace = await workspaceWith({});
    const serve = await startHttpServe(["-w", workspace, "--shell", "allow"]);
    const marker = "23.4567";
    try {
      const client = new Client2025(serve.url);
      await client.initialize({});
      const call = client.request("tools/call", {
        name: "shell",
        arguments: { command: `echo started > started.txt; sleep ${marker}; echo late > late.txt` },
      });
      call.response.catch(() => undefined);
      expect(await eventually(() => existsSync(join(workspace, "started.txt")), 30_000)).toBe(true);
      expect(processesWith(marker).length).toBeGreaterThan(0);
      const cancel = await client.notify("notifications/cancelled", {
        requestId: call.id,
        reason: "the user pressed stop",
      });
      expect(cancel.status).toBe(202);
      // The session takes its next call once the cancelled one is settled and recorded.
      const next = await client.call("shell", { command: "echo next" });
      expect(facts(next).status).toBe("ok");
      const records = await readJournal(workspace, facts(next).session);
      const cancelled = records.find(
        (r) => r.type === "tool.result" && r.data.call_id !== facts(next).call_id,
      );
      expect(cancelled?.data).toMatchObject({ name: "shell", status: "cancelled" });
      const spawned = records
        .filter((r) => r.type === "process.spawned" && r.data.call_id === cancelled?.data.call_id)
        .map((r) => r.data.pid as number);
      expect(spawned.length).toBeGreaterThan(0);
      for (const pid of spawned) expect(alive(pid)).toBe(false);
      // No process of the call is left, so nothing can write late.txt any more.
      expect(processesWith(marker)).toEqual([]);
      expect(existsSync(join(workspace, "late.txt"))).toBe(false);
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });

  it("a client cannot cancel another client's call: a cancellation reaches only its own session", async () => {
    const workspace = await workspaceWith({});
    const serve = await startHttpServe(["-w", workspace, "--shell", "allow"]);
    try {
      const alice = new Client2025(serve.url);
      await alice.initialize({});
      const mallory = new Client2025(serve.url);
      await mallory.initialize({});
      const call = alice.request("tools/call", {
        name: "shell",
        arguments: {
          command: "echo started > started.txt; while [ ! -e go ]; do sleep 0.05; done; echo finished",
        },
      });
      expect(await eventually(() => existsSync(join(workspace, "started.txt")), 30_000)).toBe(true);
      // Same request id, sent in Mallory's session: it names no request of hers.
      const cancel = await mallory.notify("notifications/cancelled", {
        requestId: call.id,
        reason: "hostile",
      });
      expect(cancel.status).toBe(202);
      await writeFile(join(workspace, "go"), "");
      const result = await call.response;
      expect(facts(result).status).toBe("ok");
      expect(JSON.stringify(result)).toContain("finished");
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });

  it("ends a session on DELETE (its running call is stopped) and keeps no more sessions than --max-clients", async () => {
    const workspace = await workspaceWith({});
    const serve = await startHttpServe(["-w", workspace, "--shell", "allow", "--max-clients", "2"]);
    const marker = "24.5678";
    try {
      const first = new Client2025(serve.url);
      await first.initialize({});
      const second = new Client2025(serve.url);
      await second.initialize({});
      const third = await fetch(serve.url, {
        method: "POST",
        headers: new Client2025(serve.url).headers(),
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: {
            protocolVersion: PROTOCOL,
            capabilities: {},
            clientInfo: { name: "third", version: "1" },
          },
        }),
      });
      expect(third.status).toBe(503);
      expect(await third.text()).toContain("too many client sessions");

      const call = first.request("tools/call", {
        name: "shell",
        arguments: { command: `echo started > started.txt; sleep ${marker}; echo late > late.txt` },
      });
      call.response.catch(() => undefined);
      expect(await eventually(() => existsSync(join(workspace, "started.txt")), 30_000)).toBe(true);
      const ended = await first.end();
      expect(ended.status).toBe(200);
      // DELETE is answered once the session has ended: its call's processes are gone by then.
      expect(processesWith(marker)).toEqual([]);
      expect(existsSync(join(workspace, "late.txt"))).toBe(false);
      const after = await first.notify("notifications/initialized", {});
      expect(after.status).toBe(404);
      // Its place is free again.
      const fourth = new Client2025(serve.url);
      await fourth.initialize({});
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });

  it("ends a session idle for --client-idle-timeout", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const serve = await startHttpServe(["-w", workspace, "--client-idle-timeout", "1500"]);
    try {
      const client = new Client2025(serve.url);
      await client.initialize({});
      const read = await client.call("read_file", { path: "a.txt" });
      const session = facts(read).session;
      expect(await eventually(() => serve.stderr().includes(`session ${session} ended`), 15_000)).toBe(true);
      const after = await client.notify("notifications/initialized", {});
      expect(after.status).toBe(404);
      expect((await readJournal(workspace, session)).at(-1)?.type).toMatch(/^run\./);
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });
});

describe("harness mcp serve --http: Host and Origin (DNS rebinding)", () => {
  it("answers 403 to a Host or Origin it does not serve, and nothing runs", async () => {
    const workspace = await workspaceWith({});
    const serve = await startHttpServe([
      "-w",
      workspace,
      "--write",
      "allow",
      "--allow-origin",
      "http://localhost:6274",
    ]);
    try {
      // No session exists before a client's first call (none is opened at start or connection).
      expect(sessionIds(workspace)).toEqual([]);
      const port = new URL(serve.url).port;
      const base = {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${TOKEN}`,
      };
      const initialize = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "page", version: "1" } },
      });
      const write = JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "write_file", arguments: { path: "pwned.txt", content: "x\n" } },
      });
      const refused: Record<string, string>[] = [
        { host: `attacker.example:${port}` },
        { host: `localhost.attacker.example:${port}` },
        { host: "127.0.0.1:1" },
        { host: `127.0.0.1:${port}`, origin: "http://attacker.example" },
        { host: `127.0.0.1:${port}`, origin: `http://attacker.example:${port}` },
        { host: `127.0.0.1:${port}`, origin: "null" },
        { host: `localhost:${port}`, origin: "http://localhost:6275" },
      ];
      for (const headers of refused) {
        for (const body of [initialize, write]) {
          const answer = await rawPost(serve.url, { ...base, ...headers }, body);
          expect(answer.status, JSON.stringify(headers)).toBe(403);
          expect(answer.headers["mcp-session-id"]).toBeUndefined();
        }
      }
      expect(existsSync(join(workspace, "pwned.txt"))).toBe(false);
      expect(sessionIds(workspace)).toEqual([]);

      // The server's own address, the loopback names and the origins allowed are served.
      const allowed: Record<string, string>[] = [
        { host: `127.0.0.1:${port}` },
        { host: `localhost:${port}`, origin: `http://localhost:${port}` },
        { host: `localhost:${port}`, origin: "http://localhost:6274" },
      ];
      for (const headers of allowed) {
        const answer = await rawPost(serve.url, { ...base, ...headers }, initialize);
        expect(answer.status, JSON.stringify(headers)).toBe(200);
        expect(answer.headers["mcp-session-id"]).toBeTruthy();
      }
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });
});

describe("harness mcp serve --http: resources are the journals of this client's own sessions", () => {
  it("hides other clients' and earlier sessions, and withholds a journal naming a file read_file may not read", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n", "secret.txt": "TOPSECRET\n" });
    // An earlier server, under a policy that let read_file read the secret.
    const earlier = await startHttpServe(["-w", workspace]);
    let earlierSession: string;
    try {
      const reader = new Client2025(earlier.url);
      await reader.initialize({});
      const read = await reader.call("read_file", { path: "secret.txt" });
      expect(JSON.stringify(read)).toContain("TOPSECRET");
      earlierSession = facts(read).session;
    } finally {
      expectExit(await earlier.stop(), 0);
    }

    const serve = await startHttpServe(["-w", workspace, "--write", "allow", "--deny", "read_file(secret*)"]);
    try {
      const alice = new Client2025(serve.url);
      await alice.initialize({});
      const bob = new Client2025(serve.url);
      await bob.initialize({});
      const aliceSession = facts(await alice.call("read_file", { path: "a.txt" })).session;
      const bobSession = facts(await bob.call("read_file", { path: "a.txt" })).session;
      const uri = (id: string) => `harness://sessions/${id}/events.jsonl`;

      const listed = async (client: Client2025) =>
        ((await client.request("resources/list", {}).response).result!.resources as { uri: string }[]).map(
          (resource) => resource.uri,
        );
      expect(await listed(alice)).toEqual([uri(aliceSession)]);
      expect(await listed(bob)).toEqual([uri(bobSession)]);

      const read = (client: Client2025, id: string) =>
        client.request("resources/read", { uri: uri(id) }).response;
      const own = await read(alice, aliceSession);
      expect((own.result!.contents as { text: string }[])[0]!.text).toContain('"type":"session.started"');
      for (const other of [bobSession, earlierSession]) {
        const answer = await read(alice, other);
        expect(answer.error, other).toBeDefined();
        expect(JSON.stringify(answer)).not.toContain("TOPSECRET");
      }

      // A call the policy allows (a write) that names a file read_file may not read: the journal
      // would show the client what the policy keeps from it, so it is withheld whole.
      const wrote = await alice.call("write_file", { path: "secret-new.txt", content: "NEWSECRET\n" });
      expect(facts(wrote).status).toBe("ok");
      expect(await listed(alice)).toEqual([]);
      const withheld = await read(alice, aliceSession);
      expect(withheld.error?.message).toContain("withheld");
      expect(JSON.stringify(withheld)).not.toContain("NEWSECRET");
    } finally {
      expectExit(await serve.stop(), 0);
    }
  });
});

describe("harness mcp serve: the HTTP client flags", () => {
  it("names what is wrong and exits 64", async () => {
    const workspace = await workspaceWith({});
    const env = { ...(await serveEnv()), MCP_TOKEN: TOKEN };
    const http = ["--http", "127.0.0.1:0", "--token-env", "MCP_TOKEN"];
    const cases: [string[], string][] = [
      [["--allow-host", "box.lan"], "--allow-host is for --http HOST:PORT"],
      [["--max-clients", "4"], "--max-clients is for --http HOST:PORT"],
      [[...http, "--allow-origin", "not an origin"], "--allow-origin must be an origin"],
      [[...http, "--allow-origin", "null"], "--allow-origin must be an origin"],
      [[...http, "--allow-host", "a b"], "--allow-host must be a host name"],
      [[...http, "--max-clients", "0"], "--max-clients must be a positive integer"],
      [[...http, "--client-idle-timeout", "soon"], "--client-idle-timeout must be a positive integer"],
    ];
    for (const [args, message] of cases) {
      const result = await finished(startHarness(["mcp", "serve", "-w", workspace, ...args], { env }));
      expectExit(result, 64);
      expect(result.stderr).toContain(message);
      expect(result.stderr).not.toContain("    at ");
    }
    expect(sessionIds(workspace)).toEqual([]);
  });
});
