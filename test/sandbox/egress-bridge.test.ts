import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { EgressConnection, EgressDecision } from "../../src/network/proxy.js";
import { BwrapSandbox } from "../../src/sandbox/bwrap.js";
import { NetworkUnavailableError } from "../../src/sandbox/egress-bridge.js";
import { Executor, type NetworkAccess } from "../../src/sandbox/executor.js";
import { NoSandbox } from "../../src/sandbox/none.js";
import { SessionNetwork } from "../../src/sandbox/session-network.js";
import { dirsPerTest } from "../shell/helpers.js";

const dirs = dirsPerTest("egress-bridge");
const environment = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: "/nonexistent", LANG: "C" };
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise<void>((done) => server.close(() => done()));
});

/**
 * Servers listen on 127.0.0.2: NO_PROXY names 127.0.0.1 (the namespace's own loopback), so a
 * client would not take 127.0.0.1 through the proxy; any other loopback address goes through it.
 */
const HOST = "127.0.0.2";

async function registry(body: string): Promise<number> {
  const server = createServer((request, response) => {
    request.resume();
    response.writeHead(200, { "content-type": "text/plain" });
    response.end(body);
  });
  await new Promise<void>((done) => server.listen(0, HOST, done));
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

function access(decide: (host: string, port: number) => EgressDecision): {
  egress: NetworkAccess;
  records: EgressConnection[];
} {
  const records: EgressConnection[] = [];
  return {
    egress: { decide: async (host, port) => decide(host, port), record: (c) => records.push(c) },
    records,
  };
}

async function run(
  command: string,
  egress: NetworkAccess | undefined,
  sandbox = new BwrapSandbox("workspace-write"),
  executor = new Executor({ environment }),
) {
  return executor.execute({
    purpose: "shell",
    argv: ["/bin/bash", "-c", command],
    workspace: dirs.workspace,
    profile: { sandbox, env: {} },
    timeoutMs: 20_000,
    ...(egress !== undefined ? { egress } : {}),
  });
}

const allow: EgressDecision = { decision: "allow", rule: "net(127.0.0.2)", reason: "allowed", exact: true };

describe("the sandbox's network bridge", () => {
  it("lets curl through the proxy to an allowed host, and journals the connection", async () => {
    const port = await registry("package document");
    const { egress, records } = access(() => allow);
    const result = await run(`curl -sS --max-time 10 http://${HOST}:${port}/pkg`, egress);
    expect(result.stdout.head).toBe("package document");
    expect(result.exitCode).toBe(0);
    expect(records).toEqual([
      expect.objectContaining({ host: HOST, port, decision: "allow", rule: "net(127.0.0.2)" }),
    ]);
    expect(records[0]!.bytes_down).toBeGreaterThan("package document".length);
  });

  it("sets the proxy variables, and a client that ignores them reaches nothing", async () => {
    const port = await registry("should not be seen");
    const { egress, records } = access(() => allow);
    const script = [
      'echo "proxy=$HTTPS_PROXY no=$NO_PROXY npm=$npm_config_https_proxy"',
      `node -e 'const s=require("net").connect(${port},"${HOST}");s.on("connect",()=>{console.log("REACHED");process.exit(0)});s.on("error",e=>{console.log("direct:",e.code);process.exit(3)})'`,
    ].join("; ");
    const result = await run(script, egress);
    // The forwarder's port is the kernel's pick in the namespace: every variable names it.
    expect(result.stdout.head).toMatch(
      /proxy=http:\/\/127\.0\.0\.1:(\d+) no=localhost,127\.0\.0\.1 npm=http:\/\/127\.0\.0\.1:\1\n/,
    );
    expect(result.stdout.head).not.toContain("127.0.0.1:0 ");
    expect(result.stdout.head).toContain("direct: ECONNREFUSED");
    expect(result.stdout.head).not.toContain("REACHED");
    expect(result.exitCode).toBe(3);
    expect(records).toEqual([]);
  });

  it("two concurrent calls in one session namespace each get a forwarder and records of their own", async () => {
    const network = new SessionNetwork();
    const executor = new Executor({ environment, sessionNetwork: network });
    try {
      const port = await registry("package document");
      const first = access(() => allow);
      const second = access(() => allow);
      // Both are behind their forwarders at once: each waits until the other has started
      // (through marker files in the shared workspace; bounded, so a lone call does not hang).
      const command = (mine: string, theirs: string) =>
        `touch started-${mine}; n=0; until [ -e started-${theirs} ] || [ $n -ge 400 ]; do sleep 0.05; n=$((n+1)); done; ` +
        `curl -sS --max-time 10 http://${HOST}:${port}/${mine}; echo; readlink /proc/self/ns/net; echo "$HTTPS_PROXY"; ` +
        `[ -e started-${theirs} ]`;
      const [a, b] = await Promise.all([
        run(command("a", "b"), first.egress, new BwrapSandbox("workspace-write"), executor),
        run(command("b", "a"), second.egress, new BwrapSandbox("workspace-write"), executor),
      ]);
      for (const result of [a, b]) {
        expect(result.exitCode).toBe(0);
        expect(result.stdout.head).toContain("package document");
      }
      const [, netA, proxyA] = a.stdout.head.split("\n");
      const [, netB, proxyB] = b.stdout.head.split("\n");
      expect(netA).toBe(await network.namespace());
      expect(netB).toBe(netA);
      expect(proxyA).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(proxyB).not.toBe(proxyA);
      expect(first.records).toEqual([expect.objectContaining({ host: HOST, port, decision: "allow" })]);
      expect(second.records).toEqual([expect.objectContaining({ host: HOST, port, decision: "allow" })]);
    } finally {
      await executor.close();
    }
  });

  it("a denied host gets 403 with the reason and is journaled as denied", async () => {
    const port = await registry("secret");
    const reason = `no rule allows ${HOST}:${port}: add --allow 'net(${HOST}:${port})'`;
    const { egress, records } = access(() => ({ decision: "deny", reason, exact: false }));
    const result = await run(`curl -sS -o /dev/null -w '%{http_code}' http://${HOST}:${port}/`, egress);
    expect(result.stdout.head).toBe("403");
    expect(records).toEqual([expect.objectContaining({ decision: "deny", reason, bytes_down: 0 })]);
  });

  it("passes the command's exit code and signal through the forwarder", async () => {
    const { egress } = access(() => allow);
    expect((await run("exit 7", egress)).exitCode).toBe(7);
    const killed = await run("kill -TERM $$", egress);
    expect(killed.exitCode === 143 || killed.exitSignal === "SIGTERM").toBe(true);
  });

  it("fails closed when the proxy goes away mid-call: later connections reach nothing", async () => {
    const port = await registry("package document");
    const parent = dirs.scratch;
    const { egress, records } = access(() => allow);
    egress.parent = parent;
    // The first request goes through; then the proxy's socket is removed from the host (what a
    // dead proxy leaves: nothing listening); the second request must fail, never go direct.
    const script = [
      `curl -sS --max-time 10 http://${HOST}:${port}/one; echo`,
      `sleep 1; curl -sS --max-time 5 http://${HOST}:${port}/two && echo SECOND-REACHED || echo second-failed`,
    ].join("; ");
    const running = run(script, egress);
    // Wait until the first connection is recorded, then take the proxy away.
    for (let i = 0; i < 200 && records.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const { readdir, rm } = await import("node:fs/promises");
    for (const entry of await readdir(parent)) {
      if (entry.startsWith("harness-egress-"))
        await rm(path.join(parent, entry), { recursive: true, force: true });
    }
    const result = await running;
    expect(result.stderr.head + result.stdout.head).toContain("package document");
    expect(result.stdout.head).toContain("second-failed");
    expect(result.stdout.head).not.toContain("SECOND-REACHED");
    expect(records).toHaveLength(1);
  });

  it("refuses network policy without an isolating sandbox: nothing runs", async () => {
    const { egress } = access(() => allow);
    await expect(run("echo ran", egress, new NoSandbox() as unknown as BwrapSandbox)).rejects.toBeInstanceOf(
      NetworkUnavailableError,
    );
  });

  it("without network policy the sandbox has no network and no proxy variables", async () => {
    const port = await registry("x");
    const result = await run(
      `echo "[$HTTPS_PROXY]"; curl -sS --max-time 5 http://${HOST}:${port}/ || echo failed`,
      undefined,
    );
    expect(result.stdout.head).toContain("[]");
    expect(result.stdout.head).toContain("failed");
  });
});
