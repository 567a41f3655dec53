import { spawnSync } from "node:child_process";
import { mkdirSync, realpathSync, writeFileSync } from "node:fs";
import path from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { McpStartError } from "../../src/mcp/connection.js";
import { McpRequiredServerError, startServers } from "../../src/mcp/startup.js";
import { dirsPerTest } from "../shell/helpers.js";
import { until } from "../support/until.js";
import { alive, connectionsPerTest, lastPid, logLines, rejection, toyServer } from "./connection-fixtures.js";

const dirs = dirsPerTest("mcp-start");
const connect = connectionsPerTest();

const toy = (extra: Record<string, unknown> = {}) => toyServer(dirs.scratch, extra);

describe("a stdio server that cannot start", () => {
  it("reports a server that exits during startup with what it wrote to stderr", async () => {
    const { connection } = connect(
      {
        command: "node",
        args: ["-e", "console.error('boom: MISSING_DB_URL is not set'); process.exit(3)"],
        sandbox: "off",
      },
      dirs.workspace,
    );
    const error = await rejection(connection.start());
    expect(error).toBeInstanceOf(McpStartError);
    expect(error).toMatchObject({ server: "test", failure: "handshake" });
    expect((error as Error).message).toContain("boom: MISSING_DB_URL is not set");
    expect(connection.state).toBe("failed");
    const call = await rejection(connection.callTool("anything", {}));
    expect(call).toMatchObject({ kind: "not_connected", outcome: "not_sent" });
  });

  it("keeps the server's stderr with harness's secrets scrubbed, and runs it in its configured cwd", async () => {
    mkdirSync(path.join(dirs.workspace, "sub"));
    const script =
      "console.error('cwd=' + process.cwd() + ' token ' + 'ghp_secret_' + 'value_1234567890'); process.exit(1)";
    const { connection } = connect(
      { command: "node", args: ["-e", script], cwd: "sub", sandbox: "off" },
      dirs.workspace,
    );
    const error = await rejection(connection.start());
    const message = (error as Error).message;
    expect(message).toContain(
      `cwd=${path.join(realpathSync(dirs.workspace), "sub")} token [redacted:GITHUB_TOKEN]`,
    );
    expect(message).not.toContain("ghp_secret_value");
    expect(connection.lastStderr?.head).toContain("[redacted:GITHUB_TOKEN]");
  });

  it("says so when a sandboxed server's command is not visible in its sandbox", async () => {
    const outside = path.join(dirs.scratch, "server.sh");
    writeFileSync(outside, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
    const { connection } = connect({ command: outside }, dirs.workspace);
    const error = await rejection(connection.start());
    expect((error as Error).message).toBe(
      `MCP server "test" could not be started: the command ${realpathSync(outside)} is not visible in the server's sandbox; add its directory to the server's read_paths`,
    );
  });

  it("ends the connection to a server that sends a line longer than 16 MiB, and stops it", async () => {
    const pidFile = path.join(dirs.scratch, "pid");
    const script = [
      "require('node:fs').writeFileSync(process.argv[1], String(process.pid));",
      "process.stdin.once('data', () => process.stdout.write('x'.repeat(17 * 1024 * 1024)));",
      "setInterval(() => {}, 1000);",
    ].join("");
    const { connection } = connect(
      { command: "node", args: ["-e", script, pidFile], sandbox: "off" },
      dirs.workspace,
    );
    const error = await rejection(connection.start());
    expect(error).toMatchObject({ failure: "handshake" });
    expect(alive(Number(logLines(pidFile)[0]))).toBe(false);
  });

  it("skips stdout lines that are not JSON, and ends the connection on JSON that is not JSON-RPC", async () => {
    const noisy = connect(
      { ...toy(), env: { TOY_LOG: path.join(dirs.scratch, "toy.log"), TOY_NOISE: "1" } },
      dirs.workspace,
    ).connection;
    await noisy.start();
    expect(await noisy.callTool("echo", { text: "through" })).toMatchObject({
      content: [{ text: "through" }],
    });

    const script =
      "process.stdin.once('data', () => process.stdout.write('{\"hello\":1}\\n')); setInterval(() => {}, 1000)";
    const confused = connect(
      { command: "node", args: ["-e", script], sandbox: "off" },
      dirs.workspace,
    ).connection;
    expect(await rejection(confused.start())).toMatchObject({ failure: "handshake" });
  });

  it("reports a command that is not on PATH without starting anything", async () => {
    const { connection } = connect({ command: "no-such-mcp-server-here", sandbox: "off" }, dirs.workspace);
    const error = await rejection(connection.start());
    expect(error).toMatchObject({ failure: "spawn" });
    expect((error as Error).message).toBe(
      'MCP server "test" could not be started: command "no-such-mcp-server-here" was not found on PATH',
    );
  });

  it("stops a server that does not answer the handshake within startup_timeout_ms, and leaves no process", async () => {
    const { connection } = connect(
      {
        command: "node",
        args: [
          "-e",
          "require('node:fs').writeFileSync(process.argv[1], String(process.pid)); setInterval(() => {}, 1000)",
          path.join(dirs.scratch, "pid"),
        ],
        sandbox: "off",
        startup_timeout_ms: 700,
      },
      dirs.workspace,
    );
    const began = Date.now();
    const error = await rejection(connection.start());
    expect(Date.now() - began).toBeLessThan(5_000);
    expect(error).toMatchObject({ failure: "timeout" });
    expect((error as Error).message).toBe(
      'MCP server "test" did not complete the MCP handshake within startup_timeout_ms',
    );
    const pid = Number(logLines(path.join(dirs.scratch, "pid"))[0]);
    expect(pid).toBeGreaterThan(0);
    expect(alive(pid)).toBe(false);
  });
});

describe("starting a session's servers", () => {
  const failing = {
    command: "node",
    args: ["-e", "console.error('no database'); process.exit(2)"],
    sandbox: "off",
  };

  it("starts them concurrently and leaves out an optional server that fails, reporting progress", async () => {
    const slow = connect({ ...toy(), startup_timeout_ms: 5_000 }, dirs.workspace).connection;
    const broken = connect(failing, dirs.workspace).connection;
    const progress: string[] = [];
    const outcomes = await startServers([slow, broken], (event) => progress.push(`${event.phase}`));
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, false]);
    expect(outcomes[1]).toMatchObject({ ok: false, required: false, error: { failure: "handshake" } });
    expect(progress.slice(0, 2)).toEqual(["starting", "starting"]);
    expect(progress.slice(2).sort()).toEqual(["failed", "ready"]);
    expect(slow.state).toBe("ready");
  });

  it("stops the run with a clear error when a required server fails, and leaves nothing running", async () => {
    const { connection: healthy, events } = connect(toy(), dirs.workspace);
    const broken = connect({ ...failing, required: true }, dirs.workspace).connection;
    const error = await rejection(startServers([healthy, broken]));
    expect(error).toBeInstanceOf(McpRequiredServerError);
    expect((error as Error).message).toBe(
      [
        "a required MCP server could not start:",
        '- MCP server "test" failed during the MCP handshake: the process exited with code 2; its stderr ends with:',
        "  │ no database",
        'Fix the definition under "mcp_servers" in your config, or set "required": false to run without it.',
      ].join("\n"),
    );
    expect(healthy.state).toBe("closed");
    expect(alive(lastPid(events))).toBe(false);
  });
});
describe("harness exiting while a stdio server runs", () => {
  it("takes the server's whole tree with it, although nobody closed the connection", async () => {
    // A separate harness process: it starts a server whose tool spawns a grandchild, prints the
    // pids, and exits without closing anything.
    const entry = path.join(dirs.scratch, "owner.ts");
    const connectionModule = path.resolve(import.meta.dirname, "../../src/mcp/connection.ts");
    const configModule = path.resolve(import.meta.dirname, "../../src/mcp/config.ts");
    const executorModule = path.resolve(import.meta.dirname, "../../src/sandbox/executor.ts");
    writeFileSync(
      entry,
      [
        `import { McpConnection } from ${JSON.stringify(connectionModule)};`,
        `import { parseMcpServer } from ${JSON.stringify(configModule)};`,
        `import { Executor } from ${JSON.stringify(executorModule)};`,
        "let pid = 0;",
        "const connection = new McpConnection({",
        "  name: 'toy',",
        `  definition: parseMcpServer('toy', ${JSON.stringify(toy())}, 'test'),`,
        `  stdio: { executor: new Executor(), workspace: ${JSON.stringify(dirs.workspace)} },`,
        "  onEvent: (event) => { if (event.type === 'started') pid = event.pid ?? 0; },",
        "});",
        "await connection.start();",
        "const result = await connection.callTool('spawn_child', {});",
        "console.log(JSON.stringify({ server: pid, grandchild: Number(result.content[0].text) }));",
        "process.exit(0);",
      ].join("\n"),
    );
    const bundle = path.join(dirs.scratch, "owner.mjs");
    await build({
      entryPoints: [entry],
      bundle: true,
      platform: "node",
      format: "esm",
      outfile: bundle,
      logLevel: "error",
      banner: {
        js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
      },
    });
    const run = spawnSync(process.execPath, [bundle], { encoding: "utf8", timeout: 20_000 });
    expect(run.status).toBe(0);
    const { server, grandchild } = JSON.parse(run.stdout.trim()) as { server: number; grandchild: number };
    expect(server).toBeGreaterThan(0);
    await until(() => !alive(server) && !alive(grandchild));
  });
});
