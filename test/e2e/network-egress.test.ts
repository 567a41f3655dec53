import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
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
 * The network by policy, through the built CLI: `npm install` inside the sandbox from a registry
 * on the host's loopback, allowed by one net() rule and journaled; the same host without a rule
 * denied; a client that ignores the proxy variables reaching nothing.
 *
 * The registry listens on 127.0.0.2: NO_PROXY names 127.0.0.1 (the sandbox's own loopback, for
 * servers a command starts itself), so npm would not take 127.0.0.1 through the proxy. 127.0.0.2
 * is loopback too, so the rule must name it exactly (a wildcard would be refused).
 */

const HOST = "127.0.0.2";
const PACKAGE = "tiny-egress-pkg";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

interface Registry {
  port: number;
  requests: string[];
  connections: number;
  tarballBytes: number;
  close(): Promise<void>;
}

/** A registry serving one package document and its tarball, built here with tar. */
async function registry(): Promise<Registry> {
  const dir = await tempDir("harness-registry-");
  await mkdir(join(dir, "package"));
  await writeFile(
    join(dir, "package/package.json"),
    JSON.stringify({ name: PACKAGE, version: "1.0.0", main: "index.js" }),
  );
  await writeFile(join(dir, "package/index.js"), 'module.exports = "installed through the proxy";\n');
  execFileSync("tar", ["czf", join(dir, "pkg.tgz"), "-C", dir, "package"]);
  const tarball = await readFile(join(dir, "pkg.tgz"));
  const shasum = createHash("sha1").update(tarball).digest("hex");
  const integrity = `sha512-${createHash("sha512").update(tarball).digest("base64")}`;
  const requests: string[] = [];
  let connections = 0;
  let port = 0;
  const server: Server = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    request.resume();
    const base = `http://${HOST}:${port}`;
    if (request.url === `/${PACKAGE}`) {
      const document = {
        name: PACKAGE,
        "dist-tags": { latest: "1.0.0" },
        versions: {
          "1.0.0": {
            name: PACKAGE,
            version: "1.0.0",
            main: "index.js",
            dist: { tarball: `${base}/${PACKAGE}/-/${PACKAGE}-1.0.0.tgz`, shasum, integrity },
          },
        },
      };
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify(document));
      return;
    }
    if (request.url === `/${PACKAGE}/-/${PACKAGE}-1.0.0.tgz`) {
      response.writeHead(200, {
        "content-type": "application/octet-stream",
        "content-length": tarball.length,
      });
      response.end(tarball);
      return;
    }
    response.writeHead(404, { "content-type": "application/json" });
    response.end("{}");
  });
  server.on("connection", () => {
    connections += 1;
  });
  await new Promise<void>((done) => server.listen(0, HOST, done));
  port = (server.address() as AddressInfo).port;
  return {
    port,
    requests,
    get connections() {
      return connections;
    },
    tarballBytes: tarball.length,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

async function environment(): Promise<NodeJS.ProcessEnv> {
  const configFile = join(await tempDir("harness-config-"), "config.json");
  await writeFile(configFile, "{}");
  return { ...childEnv(), HARNESS_CONFIG: configFile };
}

async function run(workspace: string, command: string, flags: string[]) {
  const script = await jsonScript([
    { calls: [{ id: "s1", name: "shell", arguments: { command, timeout_ms: 60_000 } }] },
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
      ...flags,
      "install it",
    ],
    { env: await environment() },
  );
  const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
  try {
    const result = await finished(child);
    const session = String(jsonSummary(result).session);
    return { result, session, records: await readJournal(workspace, session) };
  } finally {
    clearTimeout(timer);
  }
}

const npmInstall = (port: number) =>
  `npm install --no-audit --no-fund --no-update-notifier --registry http://${HOST}:${port}/ ${PACKAGE} && node -e 'console.log(require("${PACKAGE}"))'`;

describe("harness run --network policy", () => {
  it("npm install from a loopback registry works when a rule names it, and every connection is journaled", async () => {
    const server = await registry();
    try {
      const workspace = await workspaceWith({ "README.md": "x\n" });
      const { result, session, records } = await run(workspace, npmInstall(server.port), [
        "--network",
        "policy",
        "--allow",
        `net(${HOST}:${server.port})`,
      ]);
      expectExit(result, 0);
      const call = resultsByCall(records).get("s1");
      expect(call).toMatchObject({ status: "ok" });
      expect(JSON.stringify(call)).toContain("installed through the proxy");
      // The package is on disk, in the workspace, written by npm inside the sandbox.
      const installed = JSON.parse(
        await readFile(join(workspace, "node_modules", PACKAGE, "package.json"), "utf8"),
      ) as { version: string };
      expect(installed.version).toBe("1.0.0");
      expect(server.requests).toEqual(
        expect.arrayContaining([`GET /${PACKAGE}`, `GET /${PACKAGE}/-/${PACKAGE}-1.0.0.tgz`]),
      );
      const connections = ofType(records, "net.connection").map((record) => record.data);
      expect(connections.length).toBeGreaterThan(0);
      for (const connection of connections) {
        expect(connection).toMatchObject({
          call_id: "s1",
          host: HOST,
          port: server.port,
          decision: "allow",
          rule: `net(${HOST}:${server.port})`,
        });
      }
      const down = connections.reduce((sum, c) => sum + Number(c.bytes_down), 0);
      expect(down).toBeGreaterThan(server.tarballBytes);
      // Journaled while the call ran: before its result.
      const resultSeq = ofType(records, "tool.result")[0]!.seq;
      for (const record of ofType(records, "net.connection")) expect(record.seq).toBeLessThan(resultSeq);

      const inspected = await harness(["inspect", session, "--workspace", workspace, "--json"]);
      expectExit(inspected, 0);
      const view = JSON.parse(inspected.stdout) as { connections: Record<string, unknown>[] };
      expect(view.connections).toEqual(connections);
      const human = await harness(["inspect", session, "--workspace", workspace]);
      expect(human.stdout).toContain(
        `s1: ${connections.length} connection(s), ${connections.length} allowed, 0 denied`,
      );
    } finally {
      await server.close();
    }
  });

  it("the same host with no rule is denied and journaled, and npm fails", async () => {
    const server = await registry();
    try {
      const workspace = await workspaceWith({ "README.md": "x\n" });
      const { result, records } = await run(workspace, npmInstall(server.port), ["--network", "policy"]);
      expectExit(result, 0);
      expect(resultsByCall(records).get("s1")).toMatchObject({ status: "error" });
      expect(existsSync(join(workspace, "node_modules", PACKAGE))).toBe(false);
      expect(server.connections).toBe(0);
      const connections = ofType(records, "net.connection").map((record) => record.data);
      expect(connections.length).toBeGreaterThan(0);
      expect(connections[0]).toMatchObject({
        call_id: "s1",
        host: HOST,
        port: server.port,
        decision: "deny",
        reason: `no rule allows ${HOST}:${server.port}: add --allow 'net(${HOST}:${server.port})'`,
        bytes_up: 0,
        bytes_down: 0,
      });
    } finally {
      await server.close();
    }
  });

  it("a client that ignores the proxy variables reaches nothing, even with the host allowed", async () => {
    const server = await registry();
    try {
      const workspace = await workspaceWith({ "README.md": "x\n" });
      const direct = `node -e 'const s=require("net").connect(${server.port},"${HOST}");s.on("connect",()=>{console.log("REACHED");process.exit(0)});s.on("error",e=>{console.log("direct:",e.code);process.exit(3)})'`;
      const { records } = await run(workspace, direct, [
        "--network",
        "policy",
        "--allow",
        `net(${HOST}:${server.port})`,
      ]);
      const call = JSON.stringify(resultsByCall(records).get("s1"));
      expect(call).toContain("direct: ECONNREFUSED");
      expect(call).not.toContain("REACHED");
      expect(server.connections).toBe(0);
      expect(ofType(records, "net.connection")).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("--network off (the default) gives commands no network and no proxy variables", async () => {
    const server = await registry();
    try {
      const workspace = await workspaceWith({ "README.md": "x\n" });
      const { records } = await run(
        workspace,
        `echo "proxy=[$HTTPS_PROXY]"; curl -sS --max-time 5 http://${HOST}:${server.port}/${PACKAGE} || echo unreachable`,
        ["--allow", `net(${HOST}:${server.port})`],
      );
      const call = JSON.stringify(resultsByCall(records).get("s1"));
      expect(call).toContain("proxy=[]");
      expect(call).toContain("unreachable");
      expect(server.connections).toBe(0);
    } finally {
      await server.close();
    }
  });

  it("refuses --network policy with --sandbox off, saying why", async () => {
    const workspace = await workspaceWith({ "README.md": "x\n" });
    const script = await jsonScript([{ text: "done" }]);
    const result = await finished(
      startHarness(
        [
          "run",
          "--script",
          script,
          "--workspace",
          workspace,
          "--json",
          "--sandbox",
          "off",
          "--network",
          "policy",
          "go",
        ],
        { env: await environment() },
      ),
    );
    expect(result.code).toBe(64);
    expect(result.stderr).toContain("--network policy needs the sandbox");
  });

  it("policy explain net shows the deciding rule and its source", async () => {
    const workspace = await workspaceWith({ "README.md": "x\n" });
    const allowed = await harness([
      "policy",
      "explain",
      "net",
      '{"host": "Files.PythonHosted.org", "port": 443}',
      "--workspace",
      workspace,
      "--allow",
      "net(*.pythonhosted.org)",
      "--allow",
      "*",
      "--json",
    ]);
    expectExit(allowed, 0);
    expect(JSON.parse(allowed.stdout)).toMatchObject({
      tool: "net",
      decision: "allow",
      rule: "net(*.pythonhosted.org)",
      source: "cli",
      target: "files.pythonhosted.org:443",
      exact: false,
      network: "off",
    });
    const denied = await harness([
      "policy",
      "explain",
      "net",
      '{"host": "registry.npmjs.org", "port": 443}',
      "--workspace",
      workspace,
      "--allow",
      "*",
    ]);
    expectExit(denied, 0);
    expect(denied.stdout).toContain("net registry.npmjs.org:443: deny");
    expect(denied.stdout).toContain(
      "no rule allows registry.npmjs.org:443: add --allow 'net(registry.npmjs.org:443)'",
    );
  });
});
