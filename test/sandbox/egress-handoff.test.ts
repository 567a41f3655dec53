import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo, Server as NetServer } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { EgressConnection, EgressDecision } from "../../src/network/proxy.js";
import { BwrapSandbox } from "../../src/sandbox/bwrap.js";
import { bridgedArgv, LISTENER_MESSAGE, receiveListener } from "../../src/sandbox/egress-bridge.js";
import { Executor, type NetworkAccess } from "../../src/sandbox/executor.js";
import { dirsPerTest } from "../shell/helpers.js";

/*
 * The bridge's hand-off: the forwarder in the sandbox makes the listening socket and gives it to
 * harness, whose proxy accepts the sandbox's connections itself. What must hold: nothing in the
 * sandbox copies bytes any more (the forwarder holds no socket once the command runs), the
 * command has no channel to harness, and a hand-off that does not happen means no command and no
 * network (exit 125), never another way out.
 */

const dirs = dirsPerTest("egress-handoff");
const environment = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: "/nonexistent", LANG: "C" };
const HOST = "127.0.0.2";
const servers: Server[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const server of servers.splice(0)) await new Promise<void>((done) => server.close(() => done()));
});

async function registry(body: string): Promise<number> {
  const server = createServer((request, response) => {
    request.resume();
    response.end(body);
  });
  await new Promise<void>((done) => server.listen(0, HOST, done));
  servers.push(server);
  return (server.address() as AddressInfo).port;
}

const allow: EgressDecision = { decision: "allow", rule: "net(127.0.0.2)", reason: "allowed", exact: true };

async function run(command: string, egress: NetworkAccess) {
  return new Executor({ environment }).execute({
    purpose: "shell",
    argv: ["/bin/bash", "-c", command],
    workspace: dirs.workspace,
    profile: { sandbox: new BwrapSandbox("workspace-write"), env: {} },
    timeoutMs: 30_000,
    egress,
  });
}

/** The forwarder in `handoff` mode, unsandboxed, with a channel or without. */
function forwarder(marker: string, channel: boolean): ChildProcess {
  const [file, ...args] = bridgedArgv(process.execPath, ["/bin/sh", "-c", `echo ran > ${marker}`], "handoff");
  const child = spawn(file as string, args, {
    stdio: ["ignore", "pipe", "pipe", ...(channel ? ["ipc" as const] : [])],
    env: { PATH: environment.PATH },
  });
  children.push(child);
  return child;
}

function exited(child: ChildProcess): Promise<{ code: number | null; stderr: string }> {
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stderr })));
}

describe("the bridge hands its listening socket to the proxy", () => {
  it("the proxy serves the sandbox directly: the forwarder holds no socket, the command no channel", async () => {
    const port = await registry("through one hop");
    const records: EgressConnection[] = [];
    const result = await run(
      [
        `curl -sS --max-time 10 http://${HOST}:${port}/pkg; echo`,
        // The forwarder is the command's parent: its sockets beyond stdout and stderr (which are
        // socket pairs to harness), then the command's own.
        `echo "forwarder sockets: $(ls -l /proc/$PPID/fd | awk '$9 > 2 && $11 ~ /socket:/' | wc -l)"`,
        `echo "command sockets: $(ls -l /proc/$$/fd | awk '$9 > 2 && $11 ~ /socket:/' | wc -l)"`,
        `echo "channel: \${NODE_CHANNEL_FD-none}"`,
      ].join("; "),
      { decide: async () => allow, record: (connection) => records.push(connection) },
    );
    expect(result.exitCode).toBe(0);
    const lines = result.stdout.head.split("\n");
    expect(lines[0]).toBe("through one hop");
    expect(lines).toContain("forwarder sockets: 0");
    expect(lines).toContain("command sockets: 0");
    expect(lines).toContain("channel: none");
    expect(records).toEqual([expect.objectContaining({ host: HOST, port, decision: "allow" })]);
  });

  it("in the background, on pipes or on a terminal (which relays: no channel there), the host is reached", async () => {
    const port = await registry("background body");
    for (const pty of [false, true]) {
      const records: EgressConnection[] = [];
      let output = "";
      const started = await new Executor({ environment }).background({
        argv: ["/bin/bash", "-c", `curl -sS --max-time 10 http://${HOST}:${port}/bg; echo; echo done`],
        workspace: dirs.workspace,
        profile: { sandbox: new BwrapSandbox("workspace-write"), env: {} },
        egress: { decide: async () => allow, record: (connection) => records.push(connection) },
        onOutput: (_stream, bytes) => {
          output += bytes.toString();
        },
        ...(pty ? { pty } : {}),
      });
      const exit = await started.process.exited;
      await started.stop();
      expect(exit.code, `pty ${pty}: ${output}`).toBe(0);
      expect(output).toContain("background body");
      expect(records).toEqual([expect.objectContaining({ host: HOST, port, decision: "allow" })]);
    }
  });

  it("a forwarder whose hand-off is refused runs nothing and exits 125", async () => {
    const marker = path.join(dirs.scratch, "ran");
    const child = forwarder(marker, true);
    const ending = exited(child);
    // Harness's end closes the channel without taking the socket.
    child.once("message", () => child.disconnect());
    const { code, stderr } = await ending;
    expect(code).toBe(125);
    expect(stderr).toContain("the network hand-off was refused");
    expect(existsSync(marker)).toBe(false);
  });

  it("a forwarder in hand-off mode without a channel runs nothing and exits 125", async () => {
    const marker = path.join(dirs.scratch, "ran");
    const { code, stderr } = await exited(forwarder(marker, false));
    expect(code).toBe(125);
    expect(stderr).toContain("no channel");
    expect(existsSync(marker)).toBe(false);
  });

  it("an accepted hand-off starts the command once the channel is closed, and the socket is harness's", async () => {
    const marker = path.join(dirs.scratch, "ran");
    const child = forwarder(marker, true);
    const ending = exited(child);
    const adopted: NetServer[] = [];
    receiveListener(child, (listener) => adopted.push(listener));
    const { code } = await ending;
    expect(code).toBe(0);
    expect(existsSync(marker)).toBe(true);
    expect(adopted).toHaveLength(1);
    expect(adopted[0]!.address()).toMatchObject({ address: "127.0.0.1" });
    adopted[0]!.close();
  });

  it("harness takes only a server on 127.0.0.1 with the right message; anything else is refused", async () => {
    // A stand-in for a forwarder that offers a socket listening on every address.
    const child = spawn(
      process.execPath,
      [
        "-e",
        `const s = require("net").createServer(); s.listen(0, "0.0.0.0", () => process.send({ type: ${JSON.stringify(LISTENER_MESSAGE)} }, s));
         process.on("message", () => process.exit(0)); process.on("disconnect", () => process.exit(125));`,
      ],
      { stdio: ["ignore", "pipe", "pipe", "ipc"] },
    );
    children.push(child);
    const ending = exited(child);
    const adopted: NetServer[] = [];
    receiveListener(child, (listener) => adopted.push(listener));
    expect((await ending).code).toBe(125);
    expect(adopted).toEqual([]);
  });
});
