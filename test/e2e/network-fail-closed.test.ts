import { existsSync } from "node:fs";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * The egress proxy gone mid-session, through the built CLI. A shell call with network `policy`
 * fetches once through its proxy, then waits; the test removes the proxy's directory on the host
 * (its socket with it: the way a tmp cleaner, or anything of this user outside the sandbox, takes
 * it away; the sandbox sees it read-only and cannot), then lets the command go on. Its second
 * request must fail and reach nobody: nothing falls back to a direct connection.
 *
 * harness gets a TMPDIR of the test's own, so the test finds the call's proxy directory
 * (`harness-egress-*`, made with mkdtemp under os.tmpdir()) without guessing.
 */

const HOST = "127.0.0.2";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

async function loopbackServer(): Promise<{
  port: number;
  requests: string[];
  connections: () => number;
  close(): Promise<void>;
}> {
  const requests: string[] = [];
  let connections = 0;
  const server: Server = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    request.resume();
    response.writeHead(200, { "content-type": "text/plain" });
    response.end(`served ${request.url}\n`);
  });
  server.on("connection", () => {
    connections += 1;
  });
  await new Promise<void>((done) => server.listen(0, HOST, done));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    connections: () => connections,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

async function until(what: string, ready: () => Promise<boolean> | boolean, ms = 90_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

describe("the egress proxy gone mid-call", () => {
  it("later connections fail closed: the call reports a failure and the host receives nothing more", async () => {
    const server = await loopbackServer();
    try {
      const workspace = await workspaceWith({ "README.md": "x\n" });
      const tmp = await tempDir("harness-failclosed-tmp-");
      const configFile = join(await tempDir("harness-config-"), "config.json");
      await writeFile(configFile, "{}");
      const url = (path: string) => `http://${HOST}:${server.port}/${path}`;
      // curl reads http_proxy (set by the forwarder); --noproxy '' would be the only way round
      // it, and that finds no route (the namespace has only loopback).
      const command = [
        `curl -sS --max-time 20 ${url("first")}`,
        // Bounded by the call's timeout.
        "until [ -e proceed ]; do sleep 0.1; done",
        `curl -sS --max-time 20 ${url("second")}; echo "second curl exit $?"`,
        `curl -sS --max-time 5 --noproxy '*' ${url("direct")}; echo "direct curl exit $?"`,
        `curl -sS --max-time 20 ${url("third")}`,
      ].join("; ");
      const script = await jsonScript([
        { calls: [{ id: "s1", name: "shell", arguments: { command, timeout_ms: 120_000 } }] },
        { text: "done" },
      ]);
      const child = startHarness(
        [
          "run",
          "--script",
          script,
          "--workspace",
          workspace,
          "--json",
          "--shell",
          "allow",
          "--network",
          "policy",
          "--allow",
          `net(${HOST}:${server.port})`,
          "fetch twice",
        ],
        { env: { ...childEnv(), HARNESS_CONFIG: configFile, TMPDIR: tmp } },
      );
      const timer = setTimeout(() => child.kill("SIGKILL"), 180_000);
      const done = finished(child);
      try {
        let ended: string | undefined;
        void done.then((result) => {
          ended = `harness ended first (exit ${result.code}): ${result.stdout}\n${result.stderr}`;
        });
        await until("the first request", () => {
          if (ended !== undefined) throw new Error(ended);
          return server.requests.includes("GET /first");
        });
        const proxies = (await readdir(tmp)).filter((name) => name.startsWith("harness-egress-"));
        expect(proxies).toHaveLength(1);
        const proxyDir = join(tmp, proxies[0]!);
        expect(existsSync(join(proxyDir, "proxy.sock"))).toBe(true);
        await rm(proxyDir, { recursive: true, force: true });
        const before = server.connections();
        await mkdir(join(workspace, "proceed"));
        const result = await done;
        expectExit(result, 0);
        // Nothing reached the host after the proxy went: not through it, not around it.
        expect(server.requests).toEqual(["GET /first"]);
        expect(server.connections()).toBe(before);
        const records = await readJournal(workspace, String(jsonSummary(result).session));
        const call = resultsByCall(records).get("s1");
        // The last curl failed: the call reports a failure.
        expect(call).toMatchObject({ status: "error" });
        const text = JSON.stringify(call);
        expect(text).toContain("served /first");
        expect(text).toMatch(/second curl exit [1-9]/);
        expect(text).toMatch(/direct curl exit [1-9]/);
        expect(text).not.toContain("served /second");
        expect(text).not.toContain("served /third");
        // One connection journaled, the one made while the proxy was there.
        const connections = ofType(records, "net.connection").map((record) => record.data);
        expect(connections).toHaveLength(1);
        expect(connections[0]).toMatchObject({
          call_id: "s1",
          host: HOST,
          port: server.port,
          decision: "allow",
        });
      } finally {
        clearTimeout(timer);
        child.kill("SIGKILL");
      }
    } finally {
      await server.close();
    }
  }, 200_000);
});
