import { readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { afterEach } from "vitest";
import { type McpServerDefinition, parseMcpServer } from "../../src/mcp/config.js";
import { McpConnection, type McpConnectionEvent } from "../../src/mcp/connection.js";
import { Executor } from "../../src/sandbox/executor.js";
import { readProcStat } from "../../src/shared/proc-stat.js";

const require = createRequire(import.meta.url);

/** The reference server's entry point, run as `node <it> [stdio|streamableHttp|sse]`. */
export const EVERYTHING = path.join(
  path.dirname(require.resolve("@modelcontextprotocol/server-everything/package.json")),
  "dist/index.js",
);
/** Where the test servers' code lives: what a sandboxed server must be allowed to read. */
export const NODE_MODULES = realpathSync(path.join(path.dirname(require.resolve("zod/package.json")), ".."));
export const TOY_SERVER = path.join(import.meta.dirname, "fixtures/toy-server.mjs");

/** harness's environment in these tests: a credential and a harmless variable. */
export const HOST_ENV = {
  PATH: process.env.PATH,
  HOME: "/nonexistent",
  LANG: "C",
  GITHUB_TOKEN: "ghp_secret_value_1234567890",
  UNLISTED: "not-allow-listed",
};

export function definition(raw: Record<string, unknown>): McpServerDefinition {
  return parseMcpServer("test", raw, "test config");
}

/** Connections made by a test, closed after it even when it fails. */
export function connectionsPerTest(): (
  raw: Record<string, unknown>,
  workspace: string,
) => { connection: McpConnection; events: McpConnectionEvent[] } {
  const made: McpConnection[] = [];
  afterEach(async () => {
    await Promise.all(made.map((connection) => connection.close()));
    made.length = 0;
  });
  return (raw, workspace) => {
    const events: McpConnectionEvent[] = [];
    const connection = new McpConnection({
      name: "test",
      definition: definition(raw),
      stdio: { executor: new Executor({ environment: HOST_ENV }), workspace },
      environment: HOST_ENV,
      onEvent: (event) => events.push(event),
    });
    made.push(connection);
    return { connection, events };
  };
}

/** The pid of the last started server process (the sandbox's outer process when sandboxed). */
export function lastPid(events: readonly McpConnectionEvent[]): number {
  const started = events.filter((event) => event.type === "started");
  const pid = started.at(-1)?.type === "started" ? started.at(-1)?.pid : undefined;
  if (pid === undefined) throw new Error("no server was started");
  return pid;
}

/** Whether a process with this pid is alive (a zombie counts as gone). */
export function alive(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat !== undefined && stat.state !== "Z" && stat.state !== "X";
}

export function logLines(file: string): string[] {
  try {
    return readFileSync(file, "utf8").split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

/** The rejection of a promise that must reject. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

/** The toy server's definition, logging what reaches it to `scratch`/toy.log. */
export function toyServer(scratch: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const log = path.join(scratch, "toy.log");
  return { command: process.execPath, args: [TOY_SERVER], env: { TOY_LOG: log }, sandbox: "off", ...extra };
}
