import { mkdir, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, ofType, readJournal, removeTempDirs, resultsByCall, tempDir } from "./helpers.js";
import { methodOf, openEvents, rpc, serverConfig, serverEnv, startHttpServer } from "./serve-support.js";

/*
 * `harness serve` sessions with the network: session/start's `network` option ("off", the
 * default, or "policy"), through a real server over HTTP. The client's net() rules open a host;
 * an identity's own deny rules still close it, whatever the client allows.
 *
 * The host listens on 127.0.0.2 (loopback, but not the sandbox's NO_PROXY 127.0.0.1), so a rule
 * must name it exactly.
 */

const HOST = "127.0.0.2";
const USER = "user-token-0123456789";
const CLIENT = "client-token-0123456789";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("harness serve: session/start options.network", () => {
  let root: string;
  let server: Awaited<ReturnType<typeof startHttpServer>>;
  let upstream: Server;
  let port: number;
  const requests: string[] = [];

  beforeAll(async () => {
    upstream = createServer((request, response) => {
      requests.push(`${request.method} ${request.url}`);
      request.resume();
      response.end(`served ${request.url}\n`);
    });
    await new Promise<void>((done) => upstream.listen(0, HOST, done));
    port = (upstream.address() as AddressInfo).port;
    root = await tempDir("harness-serve-net-root-");
    const tokens = join(await tempDir(), "tokens.json");
    await writeFile(tokens, JSON.stringify({ [CLIENT]: "client" }));
    const config = await serverConfig({
      server: { identities: { client: { deny: [`net(${HOST})`], workspaces: [root] } } },
    });
    server = await startHttpServer(serverEnv(config, { HARNESS_SERVER_TOKEN: USER }), ["--tokens", tokens]);
  });

  afterAll(async () => {
    server.child.kill("SIGTERM");
    await server.exited;
    await new Promise<void>((done) => upstream.close(() => done()));
  });

  /** A session whose one shell call fetches PATH from the host; its journal once the turn ended. */
  async function fetchIn(token: string, path: string, options: Record<string, unknown>) {
    const workspace = join(root, path);
    await mkdir(workspace);
    const script = join(root, `${path}.json`);
    const command = `curl -fsS --max-time 20 http://${HOST}:${port}/${path}`;
    await writeFile(
      script,
      JSON.stringify({
        replies: [
          { calls: [{ id: "s1", name: "shell", arguments: { command, timeout_ms: 60_000 } }] },
          { text: "done" },
        ],
      }),
    );
    const started = await rpc(server.url, token, "session/start", {
      workspace,
      goal: "fetch it",
      options: { script, shell: "allow", allow: [`net(${HOST}:${port})`], ...options },
    });
    const session = started.body.result?.session as string;
    expect(session, JSON.stringify(started.body)).toBeTruthy();
    const events = openEvents(server.url, token, session);
    try {
      await events.waitFor((e) => methodOf(e) === "turn/completed", 90_000);
    } finally {
      events.close();
    }
    return readJournal(workspace, session);
  }

  it('"policy" reaches a host the client\'s rule allows, each connection journaled', async () => {
    const records = await fetchIn(USER, "allowed", { network: "policy" });
    expect(resultsByCall(records).get("s1")).toMatchObject({ status: "ok" });
    expect(JSON.stringify(resultsByCall(records).get("s1"))).toContain("served /allowed");
    expect(requests).toContain("GET /allowed");
    const connections = ofType(records, "net.connection").map((record) => record.data);
    expect(connections).toEqual([
      expect.objectContaining({
        call_id: "s1",
        host: HOST,
        port,
        decision: "allow",
        rule: `net(${HOST}:${port})`,
      }),
    ]);
    // Recorded with the session's flags, as `harness run --network policy` records it.
    const started = ofType(records, "session.started")[0]?.data as { options?: { network?: string } };
    expect(started.options?.network).toBe("policy");
  }, 120_000);

  it("without the option (off, the default) the same rule opens nothing", async () => {
    const records = await fetchIn(USER, "default-off", {});
    expect(resultsByCall(records).get("s1")).toMatchObject({ status: "error" });
    expect(requests).not.toContain("GET /default-off");
    expect(ofType(records, "net.connection")).toEqual([]);
  }, 120_000);

  it("an identity's deny rule beats the client's allow: denied, journaled, the host receives nothing", async () => {
    const records = await fetchIn(CLIENT, "identity-denied", { network: "policy" });
    expect(resultsByCall(records).get("s1")).toMatchObject({ status: "error" });
    expect(requests).not.toContain("GET /identity-denied");
    const connections = ofType(records, "net.connection").map((record) => record.data);
    expect(connections.length).toBeGreaterThan(0);
    expect(connections[0]).toMatchObject({
      call_id: "s1",
      host: HOST,
      port,
      decision: "deny",
      rule: `net(${HOST})`,
    });
  }, 120_000);

  it("an unknown mode is refused as invalid params", async () => {
    const response = await rpc(server.url, USER, "session/start", {
      workspace: join(root),
      goal: "x",
      options: { network: "open" },
    });
    expect(response.body.error?.code).toBe(-32602);
  });
});
