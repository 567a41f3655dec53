import { readlinkSync } from "node:fs";
import { connect, createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { CommandCheck } from "../../src/engine/acceptance.js";
import { BwrapSandbox } from "../../src/sandbox/bwrap.js";
import { NetworkUnavailableError } from "../../src/sandbox/egress-bridge.js";
import { Executor, type ProcessProfile, type StartedService } from "../../src/sandbox/executor.js";
import { processesIn, SessionNetwork } from "../../src/sandbox/session-network.js";
import { dirsPerTest } from "../shell/helpers.js";

const dirs = dirsPerTest("session-network");
const environment = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: "/nonexistent", LANG: "C" };
const profile = (): ProcessProfile => ({ sandbox: new BwrapSandbox("workspace-write"), env: {} });

const executors: Executor[] = [];
const services: StartedService[] = [];
const hostServers: Server[] = [];
afterEach(async () => {
  for (const service of services.splice(0)) await service.process.stop(0);
  for (const executor of executors.splice(0)) await executor.close();
  for (const server of hostServers.splice(0)) await new Promise((done) => server.close(done));
});

function sessionExecutor(network: SessionNetwork | undefined = new SessionNetwork()): Executor {
  const executor = new Executor({
    environment,
    ...(network !== undefined ? { sessionNetwork: network } : {}),
  });
  executors.push(executor);
  return executor;
}

/** A port nothing else on the host uses: a host server holds it, answering "host". */
async function hostServer(): Promise<number> {
  const server = createServer((socket) => socket.end("host\n"));
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  hostServers.push(server);
  return (server.address() as { port: number }).port;
}

/**
 * A long-running listener started as a background process would be: through the executor, as a
 * `shell` process. It answers "session" on 127.0.0.1:PORT and prints "listening" once it does.
 */
async function listener(executor: Executor, port: number): Promise<StartedService> {
  const service = await executor.start({
    purpose: "shell",
    argv: [
      process.execPath,
      "-e",
      `require("net").createServer((s) => s.end("session\\n")).listen(${port}, "127.0.0.1", () => console.log("listening"))`,
    ],
    workspace: dirs.workspace,
    profile: profile(),
  });
  services.push(service);
  const said = await new Promise<string>((resolve) => {
    let text = "";
    service.process.stdout.setEncoding("utf8");
    service.process.stdout.on("data", (part: string) => {
      text += part;
      if (text.includes("\n")) resolve(text);
    });
    void service.process.exited.then(() => resolve(text));
  });
  expect(said).toBe("listening\n");
  return service;
}

/** What a sandboxed shell call of `executor` gets from 127.0.0.1:PORT ("refused" when nothing listens). */
async function reach(executor: Executor, port: number): Promise<string> {
  const result = await executor.execute({
    purpose: "shell",
    argv: [
      process.execPath,
      "-e",
      `const s = require("net").connect(${port}, "127.0.0.1"); let t = ""; s.on("data", (d) => t += d); s.on("end", () => console.log(t.trim())); s.on("error", (e) => console.log(e.code === "ECONNREFUSED" ? "refused" : e.code))`,
    ],
    workspace: dirs.workspace,
    profile: profile(),
    timeoutMs: 20_000,
  });
  expect(result.exitCode).toBe(0);
  return result.stdout.head.trim();
}

describe("one network namespace per session", () => {
  it("a loopback server one process starts is reached by the session's later shell call, not by the host", async () => {
    const executor = sessionExecutor();
    // The host already listens on this port: the sandboxed listener can bind it only in a namespace
    // of its own, and the host's connection reaches the host's server, not the session's.
    const port = await hostServer();
    await listener(executor, port);
    expect(await reach(executor, port)).toBe("session");
    const fromHost = await new Promise<string>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      let text = "";
      socket.on("data", (part: Buffer) => {
        text += part;
      });
      socket.on("end", () => resolve(text.trim()));
    });
    expect(fromHost).toBe("host");
    const namespace = await executor.sessionNetwork!.namespace();
    expect(namespace).toMatch(/^net:\[\d+\]$/);
    expect(namespace).not.toBe(readlinkSync("/proc/self/ns/net"));
  });

  it("acceptance commands join the session's namespace", async () => {
    const executor = sessionExecutor();
    const port = await hostServer();
    await listener(executor, port);
    const check = (command: string) =>
      new CommandCheck(command, {
        workspace: dirs.workspace,
        executor,
        profile: profile(),
        timeoutMs: 20_000,
      });
    const reached = await check(
      `${process.execPath} -e 'require("net").connect(${port}, "127.0.0.1").on("data", (d) => process.exit(String(d).trim() === "session" ? 0 : 3)).on("error", () => process.exit(4))'`,
    ).run(new AbortController().signal);
    expect(reached.passed).toBe(true);
    expect(reached.exit_code).toBe(0);
  });

  it("another session does not reach it, and without a session network each call has its own", async () => {
    const first = sessionExecutor();
    const port = await hostServer();
    await listener(first, port);
    expect(await reach(sessionExecutor(), port)).toBe("refused");
    // No session network: a fresh namespace per call, with nothing in it.
    expect(await reach(sessionExecutor(undefined), port)).toBe("refused");
    expect(await reach(first, port)).toBe("session");
  });

  it("a command hook does not join the session's namespace", async () => {
    const executor = sessionExecutor();
    const port = await hostServer();
    await listener(executor, port);
    const hook = await executor.execute({
      purpose: "hook",
      argv: [
        process.execPath,
        "-e",
        `require("net").connect(${port}, "127.0.0.1").on("data", () => console.log("reached")).on("error", (e) => console.log(e.code))`,
      ],
      workspace: dirs.workspace,
      profile: profile(),
      timeoutMs: 20_000,
    });
    expect(hook.stdout.head.trim()).toBe("ECONNREFUSED");
  });

  it("ends with the session: every process in it killed, no process left in it, later calls refused", async () => {
    const network = new SessionNetwork();
    const executor = sessionExecutor(network);
    const port = await hostServer();
    const service = await listener(executor, port);
    const namespace = (await network.namespace())!;
    // The listener's sandbox (nsenter became bwrap; its init; node) is in the namespace; the
    // holder that made it is not (it is gone).
    expect(processesIn(namespace).length).toBeGreaterThanOrEqual(2);
    expect(processesIn(namespace)).toContain(service.process.pid);
    expect(await executor.close()).toBeGreaterThanOrEqual(2);
    const exit = await service.process.exited;
    expect(exit.signal).toBe("SIGKILL");
    expect(processesIn(namespace)).toEqual([]);
    await expect(
      executor.execute({
        purpose: "shell",
        argv: ["/bin/true"],
        workspace: dirs.workspace,
        profile: profile(),
        timeoutMs: 20_000,
      }),
    ).rejects.toBeInstanceOf(NetworkUnavailableError);
  });

  it("a namespace that cannot be made fails the call: nothing runs, never on the host's network", async () => {
    const executor = sessionExecutor();
    const error = await executor.sessionNetwork!.enter("/bin/false").then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(NetworkUnavailableError);
    expect((error as Error).message).toMatch(/could not be created/);
    // A later call with a working bwrap makes it from nothing.
    expect(await reach(executor, await hostServer())).toBe("refused");
  });

  it("a namespace made in the background (warm) is the one the session's first command joins", async () => {
    const network = new SessionNetwork();
    const executor = sessionExecutor(network);
    expect(await network.namespace()).toBeUndefined();
    await new BwrapSandbox("workspace-write").warm(network);
    const made = await network.namespace();
    expect(made).toMatch(/^net:\[\d+\]$/);
    const seen = await executor.execute({
      purpose: "acceptance",
      argv: ["/bin/sh", "-c", "readlink /proc/self/ns/net"],
      workspace: dirs.workspace,
      profile: profile(),
      timeoutMs: 20_000,
    });
    expect(seen.stdout.head.trim()).toBe(made);
    expect(await network.namespace()).toBe(made);
  });

  it("a background making that failed is not kept: the first command makes its own, even one that waited for it", async () => {
    const network = new SessionNetwork();
    const executor = sessionExecutor(network);
    // Failed before the command asked: forgotten.
    await network.prepare("/bin/false");
    expect(await network.namespace()).toBeUndefined();
    expect(await reach(executor, await hostServer())).toBe("refused");
    expect(await network.namespace()).toMatch(/^net:\[\d+\]$/);
    // Failing while the command waits for it: the command tries again with its own bwrap.
    const other = new SessionNetwork();
    sessionExecutor(other);
    void other.prepare("/bin/false");
    const entry = await other.enter("/usr/bin/bwrap");
    expect(entry.namespace).toMatch(/^net:\[\d+\]$/);
    expect(entry.namespace).not.toBe(readlinkSync("/proc/self/ns/net"));
  });

  it("a warm-up after the session ended makes nothing", async () => {
    const network = new SessionNetwork();
    await network.close();
    await new BwrapSandbox("workspace-write").warm(network);
    expect(await network.namespace()).toBeUndefined();
  });

  it("each call still has its own pid namespace", async () => {
    const executor = sessionExecutor();
    const pidNamespace = async () =>
      (
        await executor.execute({
          purpose: "shell",
          argv: ["/bin/sh", "-c", "readlink /proc/self/ns/pid /proc/self/ns/net"],
          workspace: dirs.workspace,
          profile: profile(),
          timeoutMs: 20_000,
        })
      ).stdout.head.split("\n");
    const [pidA, netA] = await pidNamespace();
    const [pidB, netB] = await pidNamespace();
    expect(netA).toBe(netB);
    expect(netA).toBe(await executor.sessionNetwork!.namespace());
    expect(pidA).not.toBe(pidB);
  });
});
