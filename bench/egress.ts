import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { startEgressProxy } from "../src/network/proxy.js";
import { BwrapSandbox } from "../src/sandbox/bwrap.js";
import { Executor, type NetworkAccess } from "../src/sandbox/executor.js";
import { NoSandbox } from "../src/sandbox/none.js";
import type { BenchRow } from "./stats.js";

const BYTES = 50 * 1024 * 1024;
const DOWNLOADS = 5;
const SETUPS = 50;
/** Not 127.0.0.1: NO_PROXY names it, so curl in the sandbox would not use the proxy. */
const HOST = "127.0.0.2";

/**
 * What the egress proxy costs (issue 33): a 50 MB download over loopback through it vs direct,
 * (a) in process, a client speaking CONNECT to the proxy's socket vs the server itself, and
 * (b) end to end, curl in the sandbox behind the bridge and the proxy vs curl unsandboxed and
 * direct (the sandbox's own start-up included); and the set-up cost of one connection (CONNECT
 * answered and the tunnel open) vs a direct TCP connect. Medians, runs interleaved.
 */
export async function benchEgress(): Promise<BenchRow[]> {
  // The server runs in a process of its own, as a registry would: sharing this process's event
  // loop with the proxy would charge the proxy for the server's work.
  const server = spawn(
    process.execPath,
    [
      "-e",
      `const body = Buffer.alloc(${BYTES}, 7);
       const server = require("node:http").createServer((q, r) => { q.resume(); r.writeHead(200, {"content-length": body.length}); r.end(body); });
       server.listen(0, "${HOST}", () => process.stdout.write(String(server.address().port) + "\\n"));`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    server.stdout.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    server.once("exit", () => reject(new Error("the bench server did not start")));
  });
  const access: NetworkAccess = {
    decide: async () => ({ decision: "allow", rule: `net(${HOST}:${port})`, reason: "bench", exact: true }),
    record: () => undefined,
  };
  const proxy = await startEgressProxy(access);
  const workspace = mkdtempSync(path.join(tmpdir(), "bench-egress-"));
  const executor = new Executor({ environment: { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C" } });
  const curl = (sandboxed: boolean) =>
    executor.execute({
      purpose: "shell",
      argv: ["/bin/sh", "-c", `curl -sS -o /dev/null http://${HOST}:${port}/big`],
      workspace,
      profile: { sandbox: sandboxed ? new BwrapSandbox("workspace-write") : new NoSandbox(), env: {} },
      timeoutMs: 120_000,
      ...(sandboxed ? { egress: access } : {}),
    });
  try {
    // Warm up: the sandbox probe, module loading, page cache.
    await download(() => connect(port, HOST), undefined);
    await download(() => connect(proxy.socketPath), port);
    await curl(true);
    const times = {
      direct: [] as number[],
      proxied: [] as number[],
      curlDirect: [] as number[],
      curlSandbox: [] as number[],
    };
    for (let run = 0; run < DOWNLOADS; run++) {
      times.direct.push(await timed(() => download(() => connect(port, HOST), undefined)));
      times.proxied.push(await timed(() => download(() => connect(proxy.socketPath), port)));
      times.curlDirect.push(await timed(() => checked(curl(false))));
      times.curlSandbox.push(await timed(() => checked(curl(true))));
    }
    // The fixed cost of a call with network policy: the proxy started and the forwarder in front.
    const start = { plain: [] as number[], policy: [] as number[] };
    const noop = (egress: boolean) =>
      executor.execute({
        purpose: "shell",
        argv: ["/bin/sh", "-c", "true"],
        workspace,
        profile: { sandbox: new BwrapSandbox("workspace-write"), env: {} },
        timeoutMs: 60_000,
        ...(egress ? { egress: access } : {}),
      });
    for (let run = 0; run < DOWNLOADS * 2; run++) {
      start.plain.push(await timed(() => checked(noop(false))));
      start.policy.push(await timed(() => checked(noop(true))));
    }
    const setup = { direct: [] as number[], proxied: [] as number[] };
    for (let run = 0; run < SETUPS; run++) {
      setup.direct.push(await timed(() => opened(() => connect(port, HOST), undefined)));
      setup.proxied.push(await timed(() => opened(() => connect(proxy.socketPath), port)));
    }
    const m = (values: number[]) => round(median(values));
    const note = `median of ${DOWNLOADS}, 50 MB`;
    return [
      { name: "egress.download.direct", value: m(times.direct), unit: "ms", note },
      { name: "egress.download.proxy", value: m(times.proxied), unit: "ms", note },
      {
        name: "egress.ratio.proxy_vs_direct",
        value: round(median(times.proxied) / median(times.direct)),
        unit: "x",
        note: "goal <= 1.2",
      },
      { name: "egress.curl.unsandboxed_direct", value: m(times.curlDirect), unit: "ms", note },
      {
        name: "egress.curl.sandbox_bridge_proxy",
        value: m(times.curlSandbox),
        unit: "ms",
        note: `${note}, sandbox start included`,
      },
      {
        name: "egress.ratio.sandboxed_curl_vs_direct",
        value: round(median(times.curlSandbox) / median(times.curlDirect)),
        unit: "x",
        note: "goal <= 1.2",
      },
      {
        name: "egress.call_true.sandbox",
        value: m(start.plain),
        unit: "ms",
        note: `median of ${DOWNLOADS * 2}`,
      },
      {
        name: "egress.call_true.sandbox_network_policy",
        value: m(start.policy),
        unit: "ms",
        note: `median of ${DOWNLOADS * 2}: proxy started, forwarder in front`,
      },
      { name: "egress.connect.direct", value: m(setup.direct), unit: "ms", note: `median of ${SETUPS}` },
      {
        name: "egress.connect.proxy",
        value: m(setup.proxied),
        unit: "ms",
        note: `median of ${SETUPS}: CONNECT decided, resolved, tunnel open`,
      },
    ];
  } finally {
    await proxy.close();
    server.kill("SIGKILL");
    rmSync(workspace, { recursive: true, force: true });
  }
}

async function checked(result: Promise<{ exitCode: number | null }>): Promise<void> {
  const { exitCode } = await result;
  if (exitCode !== 0) throw new Error(`curl exited ${exitCode}`);
}

/** A socket ready for HTTP: direct, or through CONNECT to `tunnel` (the server's port) on the proxy. */
function opened(open: () => Socket, tunnel: number | undefined): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = open();
    socket.once("error", reject);
    socket.once("connect", () => {
      if (tunnel === undefined) {
        resolve(socket);
        socket.destroy();
        return;
      }
      socket.write(`CONNECT ${HOST}:${tunnel} HTTP/1.1\r\n\r\n`);
      socket.once("data", (chunk: Buffer) => {
        if (!chunk.toString().startsWith("HTTP/1.1 200")) reject(new Error(chunk.toString()));
        resolve(socket);
        socket.destroy();
      });
    });
  });
}

/** GET the body over a raw socket (tunnelled or not), counting bytes until the server closes. */
function download(open: () => Socket, tunnel: number | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = open();
    let received = 0;
    let established = tunnel === undefined;
    const request = `GET /big HTTP/1.1\r\nhost: ${HOST}\r\nconnection: close\r\n\r\n`;
    socket.once("error", reject);
    socket.once("connect", () => {
      if (tunnel !== undefined) socket.write(`CONNECT ${HOST}:${tunnel} HTTP/1.1\r\n\r\n`);
      else socket.write(request);
    });
    socket.on("data", (chunk: Buffer) => {
      if (!established) {
        established = true;
        socket.write(request);
        return;
      }
      received += chunk.length;
    });
    socket.on("close", () =>
      received >= BYTES ? resolve(received) : reject(new Error(`got ${received} bytes`)),
    );
  });
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
