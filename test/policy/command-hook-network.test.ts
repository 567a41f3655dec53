import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EgressConnection } from "../../src/network/proxy.js";
import { commandHook, type HookNetwork } from "../../src/policy/command-hook.js";
import { HookRunner } from "../../src/policy/hooks.js";
import type { HookCallContext } from "../../src/runtime/ports.js";
import { BwrapSandbox } from "../../src/sandbox/bwrap.js";
import { Executor } from "../../src/sandbox/executor.js";
import { NoSandbox } from "../../src/sandbox/none.js";
import type { Sandbox } from "../../src/sandbox/sandbox.js";

/*
 * A command hook's network: a sandboxed hook given network access reaches a loopback listener
 * through a proxy of its own for that run, asked for under the id of the call it runs for and
 * its name; without access (no `"network": true`, or network `off`) its sandbox reaches nothing.
 * 127.0.0.2: NO_PROXY names the sandbox's own 127.0.0.1.
 */

const HOST = "127.0.0.2";
const environment = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: "/nonexistent", LANG: "C" };
const input: HookCallContext = {
  session: "s",
  callId: "call_3",
  tool: "read_file",
  arguments: { path: "a.txt" },
  effect: "read_only",
};

let workspace: string;
let server: Server;
let port: number;
let seen: string[];

beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), "harness-hook-net-"));
  seen = [];
  server = createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    request.resume();
    response.end("noted\n");
  });
  await new Promise<void>((done) => server.listen(0, HOST, done));
  port = (server.address() as AddressInfo).port;
});
afterEach(async () => {
  await new Promise<void>((done) => server.close(() => done()));
  await rm(workspace, { recursive: true, force: true });
});

/** Session access that allows everything and keeps what it was asked and what was recorded. */
function allowing() {
  const asked: [string, string][] = [];
  const records: EgressConnection[] = [];
  const network: HookNetwork = (callId, hook) => {
    asked.push([callId, hook]);
    return {
      decide: async () => ({ decision: "allow", rule: `net(${HOST})`, reason: "test", exact: true }),
      record: (connection) => records.push(connection),
    };
  };
  return { network, asked, records };
}

async function notify(sandbox: Sandbox, network?: HookNetwork) {
  const runner = new HookRunner([
    commandHook({
      kind: "notify",
      point: "after_execute",
      // Exit 0 either way: what the listener received says whether it got through.
      command: `curl -sS --max-time 10 http://${HOST}:${port}/from-hook || true`,
      name: "post",
      timeoutMs: 60_000,
      cwd: workspace,
      executor: new Executor({ environment }),
      profile: { sandbox, env: {} },
      ...(network !== undefined ? { network } : {}),
    }),
  ]);
  return runner.notify("after_execute", input);
}

describe("a command hook's network", () => {
  it("reaches an allowed host through a proxy of its own, asked for under the call's id and its name", {
    timeout: 60_000,
  }, async () => {
    const { network, asked, records } = allowing();
    expect((await notify(new BwrapSandbox("read-only"), network))[0]?.decision).toBe("observed");
    expect(asked).toEqual([["call_3", "post"]]);
    expect(seen).toEqual(["GET /from-hook"]);
    expect(records).toEqual([expect.objectContaining({ host: HOST, port, decision: "allow" })]);
  });

  it("without network access (no `network`, or network off) its sandbox reaches nothing", {
    timeout: 60_000,
  }, async () => {
    expect((await notify(new BwrapSandbox("read-only")))[0]?.decision).toBe("observed");
    expect((await notify(new BwrapSandbox("read-only"), () => undefined))[0]?.decision).toBe("observed");
    expect(seen).toEqual([]);
  });

  it("an unsandboxed hook is given no proxy (nothing could hold it to one)", async () => {
    const { network, asked } = allowing();
    await notify(new NoSandbox(), network);
    expect(asked).toEqual([]);
  });
});
