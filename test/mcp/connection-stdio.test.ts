import { rmSync, writeFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { McpCallError } from "../../src/mcp/connection.js";
import { dirsPerTest } from "../shell/helpers.js";
import { until } from "../support/until.js";
import {
  alive,
  connectionsPerTest,
  EVERYTHING,
  lastPid,
  logLines,
  NODE_MODULES,
  rejection,
  TOY_SERVER,
  toyServer,
} from "./connection-fixtures.js";

const dirs = dirsPerTest("mcp-stdio");
const connect = connectionsPerTest();

const toy = (extra: Record<string, unknown> = {}) => toyServer(dirs.scratch, extra);

const toyLog = () => logLines(path.join(dirs.scratch, "toy.log"));

describe("a stdio server (the reference server-everything)", () => {
  it("lists its tools as the server sent them and calls them; a bad call is an isError result", async () => {
    const { connection } = connect(
      { command: "node", args: [EVERYTHING, "stdio"], sandbox: "off" },
      dirs.workspace,
    );
    await connection.start();
    expect(connection.state).toBe("ready");
    const tools = await connection.listTools();
    const echo = tools.find((tool) => tool.name === "echo");
    expect(echo).toMatchObject({
      title: "Echo Tool",
      description: "Echoes back the input string",
      inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
      annotations: { readOnlyHint: true, idempotentHint: true },
    });
    expect(tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining(["get-sum", "trigger-long-running-operation"]),
    );

    expect(await connection.callTool("echo", { message: "hi there" })).toMatchObject({
      content: [{ type: "text", text: "Echo: hi there" }],
    });
    const sum = await connection.callTool("get-sum", { a: 2, b: 40 });
    expect(JSON.stringify(sum.content)).toContain("42");
    const bad = await connection.callTool("get-sum", { a: "two" });
    expect(bad.isError).toBe(true);
    expect(connection.starts).toBe(1);
  });

  it("runs sandboxed with the filtered environment plus exactly the variables its definition names", async () => {
    const { connection, events } = connect(
      {
        command: "node",
        args: [EVERYTHING, "stdio"],
        env: { SERVER_MODE: "test" },
        pass_env: ["GITHUB_TOKEN"],
        read_paths: [NODE_MODULES],
      },
      dirs.workspace,
    );
    await connection.start();
    const started = events.find((event) => event.type === "started");
    expect(started).toMatchObject({
      transport: "stdio",
      facts: { purpose: "mcp_server", sandbox_profile: "workspace-write" },
    });
    const result = await connection.callTool("get-env", {});
    const env = JSON.parse((result.content[0] as { text: string }).text) as Record<string, string>;
    expect(env.SERVER_MODE).toBe("test");
    expect(env.GITHUB_TOKEN).toBe("ghp_secret_value_1234567890");
    expect(env.UNLISTED).toBeUndefined();
    // The sandbox's private home and tmp, not the host's.
    expect(env.TMPDIR).toBe("/tmp");
  });

  it("fails a call in flight at once when the server is killed, reconnects on the next call, never replays", async () => {
    const { connection, events } = connect(
      { command: "node", args: [EVERYTHING, "stdio"], sandbox: "off" },
      dirs.workspace,
    );
    await connection.start();
    const pid = lastPid(events);
    const began = Date.now();
    const call = rejection(connection.callTool("trigger-long-running-operation", { duration: 20, steps: 2 }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.kill(pid, "SIGKILL");
    const error = await call;
    expect(Date.now() - began).toBeLessThan(3_000);
    expect(error).toBeInstanceOf(McpCallError);
    expect(error).toMatchObject({ kind: "disconnected", outcome: "unknown" });
    expect(connection.state).toBe("failed");

    expect(await connection.callTool("echo", { message: "again" })).toMatchObject({
      content: [{ type: "text", text: "Echo: again" }],
    });
    expect(connection.starts).toBe(2);
    expect(connection.toolsChanged).toBe(true);
    expect(lastPid(events)).not.toBe(pid);
    expect(events.map((event) => event.type)).toEqual(["started", "disconnected", "reconnecting", "started"]);
  });
});

describe("a slow tool of the reference server", () => {
  it("hits its timeout as a timeout with an unknown outcome; the connection stays usable", async () => {
    const { connection } = connect(
      { command: "node", args: [EVERYTHING, "stdio"], sandbox: "off" },
      dirs.workspace,
    );
    await connection.start();
    const began = Date.now();
    const error = await rejection(
      connection.callTool("trigger-long-running-operation", { duration: 10, steps: 10 }, { timeoutMs: 500 }),
    );
    expect(Date.now() - began).toBeLessThan(3_000);
    expect(error).toMatchObject({ kind: "timeout", outcome: "unknown" });
    expect(await connection.callTool("echo", { message: "still here" })).toMatchObject({
      content: [{ text: "Echo: still here" }],
    });
    expect(connection.starts).toBe(1);
  });
});

describe("a stdio server's failure semantics (a server that logs what reaches it)", () => {
  it("fails every call in flight when the server dies, sends none of them again after the reconnect", async () => {
    const { connection, events } = connect(toy(), dirs.workspace);
    await connection.start();
    const first = rejection(connection.callTool("slow", { ms: 30_000, tag: "A" }));
    const second = rejection(connection.callTool("slow", { ms: 30_000, tag: "B" }));
    await until(() => toyLog().includes("call slow A") && toyLog().includes("call slow B"));
    process.kill(lastPid(events), "SIGKILL");
    expect(await first).toMatchObject({ kind: "disconnected", outcome: "unknown" });
    expect(await second).toMatchObject({ kind: "disconnected", outcome: "unknown" });
    await connection.callTool("echo", { text: "C" });
    const lines = toyLog().map((line) => line.replace(/^start \d+$/, "start"));
    expect(lines).toEqual(["start", "call slow A", "call slow B", "start", "call echo C"]);
  });

  it("makes a call issued while the server is still starting wait for the start", async () => {
    const { connection } = connect(toy(), dirs.workspace);
    const starting = connection.start();
    expect(connection.state).toBe("starting");
    expect(await connection.callTool("echo", { text: "early" })).toMatchObject({
      content: [{ text: "early" }],
    });
    await starting;
    expect(connection.starts).toBe(1);
  });

  it("leaves nothing running when closed while the server is still starting", async () => {
    // The server waits before answering, so the close surely comes before the handshake ends.
    const env = { TOY_LOG: path.join(dirs.scratch, "toy.log"), TOY_START_DELAY_MS: "10000" };
    const { connection, events } = connect(toy({ env }), dirs.workspace);
    const starting = rejection(connection.start());
    await until(() => toyLog().some((line) => line.startsWith("start")));
    await connection.close();
    expect(await starting).toMatchObject({ failure: "handshake" });
    expect(connection.state).toBe("closed");
    const pid = Number(toyLog()[0]!.split(" ")[1]);
    expect(alive(pid)).toBe(false);
    expect(events.filter((event) => event.type === "started")).toHaveLength(0);
  });

  it("times a slow call out, tells the server to cancel it, and stays connected", async () => {
    const { connection } = connect(toy(), dirs.workspace);
    await connection.start();
    const began = Date.now();
    const error = await rejection(connection.callTool("slow", { ms: 20_000, tag: "T" }, { timeoutMs: 300 }));
    expect(Date.now() - began).toBeLessThan(3_000);
    expect(error).toMatchObject({ kind: "timeout", outcome: "unknown" });
    await until(() => toyLog().includes("aborted slow T"));
    expect(connection.state).toBe("ready");
    expect(await connection.callTool("echo", { text: "after" })).toMatchObject({
      content: [{ text: "after" }],
    });
    expect(connection.starts).toBe(1);
  });

  it("cancels a call when the caller's signal fires; a call aborted before sending never reaches the server", async () => {
    const { connection } = connect(toy(), dirs.workspace);
    await connection.start();
    const controller = new AbortController();
    const call = rejection(
      connection.callTool("slow", { ms: 20_000, tag: "C" }, { signal: controller.signal }),
    );
    await until(() => toyLog().includes("call slow C"));
    controller.abort();
    expect(await call).toMatchObject({ kind: "cancelled", outcome: "unknown" });
    await until(() => toyLog().includes("aborted slow C"));

    const aborted = AbortSignal.abort();
    const early = await rejection(connection.callTool("echo", { text: "never" }, { signal: aborted }));
    expect(early).toMatchObject({ kind: "cancelled", outcome: "not_sent" });
    await connection.callTool("echo", { text: "marker" });
    expect(toyLog()).not.toContain("call echo never");
  });

  it("sets toolsChanged on notifications/tools/list_changed and clears it when the tools are listed again", async () => {
    const { connection } = connect(toy(), dirs.workspace);
    await connection.start();
    const before = await connection.listTools();
    expect(before.map((tool) => tool.name).sort()).toEqual([
      "add_tool",
      "echo",
      "interfaces",
      "slow",
      "spawn_child",
    ]);
    expect(connection.toolsChanged).toBe(false);
    await connection.callTool("add_tool", {});
    await until(() => connection.toolsChanged);
    const after = await connection.listTools();
    expect(after.find((tool) => tool.name === "extra_1")).toMatchObject({ description: "added at run time" });
    expect(connection.toolsChanged).toBe(false);
  });

  it("kills the whole process tree on close, a grandchild included", async () => {
    const { connection, events } = connect(toy(), dirs.workspace);
    await connection.start();
    const server = lastPid(events);
    const result = await connection.callTool("spawn_child", {});
    const grandchild = Number((result.content[0] as { text: string }).text);
    expect(alive(grandchild)).toBe(true);
    await connection.close();
    expect(connection.state).toBe("closed");
    expect(alive(server)).toBe(false);
    expect(alive(grandchild)).toBe(false);
  });

  it("makes one reconnect attempt after a disconnect; when it fails, calls fail unsent until start()", async () => {
    // The server runs from a wrapper the test can take away: the restart then fails.
    const wrapper = path.join(dirs.scratch, "server.mjs");
    const source = `await import(${JSON.stringify(pathToFileURL(TOY_SERVER).href)});\n`;
    writeFileSync(wrapper, source);
    const { connection, events } = connect(toy({ args: [wrapper] }), dirs.workspace);
    await connection.start();
    rmSync(wrapper);
    process.kill(lastPid(events), "SIGKILL");
    await until(() => connection.state === "failed");

    const first = await rejection(connection.callTool("echo", { text: "x" }));
    expect(first).toMatchObject({ kind: "not_connected", outcome: "not_sent" });
    expect((first as Error).message).toContain('reconnecting to MCP server "test" failed');
    expect(connection.starts).toBe(2);
    const second = await rejection(connection.callTool("echo", { text: "y" }));
    expect(second).toMatchObject({ kind: "not_connected", outcome: "not_sent" });
    expect(connection.starts).toBe(2);

    writeFileSync(wrapper, source);
    await connection.start();
    expect(await connection.callTool("echo", { text: "z" })).toMatchObject({ content: [{ text: "z" }] });
    expect(toyLog().filter((line) => line.startsWith("call"))).toEqual(["call echo z"]);
  });
});

describe("a server that lists its tools in pages", () => {
  it("is listed whole: every page, in order, as the server described each tool", async () => {
    const paged = path.join(path.dirname(TOY_SERVER), "paged-server.mjs");
    const { connection } = connect({ command: "node", args: [paged], sandbox: "off" }, dirs.workspace);
    await connection.start();
    const tools = await connection.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(["tool_0", "tool_1", "tool_2", "tool_3", "tool_4"]);
    expect(tools[2]).toEqual({
      name: "tool_2",
      description: "tool number 2",
      inputSchema: { type: "object", properties: { n: { type: "integer" } } },
      annotations: { readOnlyHint: true },
    });
  });
});

describe("a sandboxed stdio server", () => {
  it("gets only loopback in its sandbox unless its definition says network: true", async () => {
    const sandboxed = (network: boolean) =>
      toy({
        sandbox: "workspace-write",
        network,
        env: { TOY_LOG: path.join(dirs.workspace, "toy.log") },
        read_paths: [NODE_MODULES, path.dirname(TOY_SERVER)],
      });
    const offline = connect(sandboxed(false), dirs.workspace).connection;
    await offline.start();
    expect(await offline.callTool("interfaces", {})).toMatchObject({ content: [{ text: "lo" }] });
    const { connection: online, events: onlineEvents } = connect(sandboxed(true), dirs.workspace);
    await online.start();
    const names = ((await online.callTool("interfaces", {})).content[0] as { text: string }).text.split(",");
    expect(names).toEqual(Object.keys(networkInterfaces()).sort());
    // Closing takes the sandbox down with the server in it.
    const sandboxPid = lastPid(onlineEvents);
    expect(alive(sandboxPid)).toBe(true);
    await online.close();
    expect(alive(sandboxPid)).toBe(false);
  });
});
