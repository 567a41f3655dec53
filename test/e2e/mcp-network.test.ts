import { chmod, readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { EVERYTHING, everything, recordingScript, run, userConfig } from "./mcp-run-support.js";

/*
 * An MCP server whose definition asks for the network, in a session with `--network policy`: its
 * connections go through a proxy of its own, decided by the same net() rules as a command's and
 * journaled as `net.connection` under `mcp_server:NAME`; a host no rule allows is refused and
 * the listener receives nothing. The server here is the reference server behind a wrapper that
 * fetches a loopback URL through the proxy variables at start.
 *
 * 127.0.0.2, not 127.0.0.1: NO_PROXY names the sandbox's own loopback.
 */

const HOST = "127.0.0.2";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

async function listener(): Promise<{ port: number; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const server: Server = createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    request.resume();
    response.end("hello from the host\n");
  });
  await new Promise<void>((done) => server.listen(0, HOST, done));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

/** A server command that fetches `url` (through the proxy variables) into `out`, then serves MCP. */
async function fetchingServer(url: string, out: string): Promise<{ command: string; dir: string }> {
  const dir = await tempDir("harness-mcp-net-server-");
  const command = join(dir, "server.sh");
  await writeFile(
    command,
    `#!/bin/sh\ncurl -sS --max-time 20 "${url}" > "${out}" 2>&1\necho "curl exit $?" >> "${out}"\nexec "${process.execPath}" "${EVERYTHING}" stdio\n`,
  );
  await chmod(command, 0o755);
  return { command, dir };
}

async function runWith(rules: string[]) {
  const host = await listener();
  try {
    const workspace = await workspaceWith({});
    const out = join(workspace, "fetched.txt");
    const server = await fetchingServer(`http://${HOST}:${host.port}/from-server`, out);
    const { env } = await userConfig({
      mcp_servers: {
        everything: {
          command: server.command,
          network: true,
          read_paths: [server.dir, ...(everything().read_paths as string[])],
        },
      },
    });
    const model = await recordingScript({ name: "mcp__everything__echo", arguments: { message: "hi" } });
    const result = await run(
      [
        "run",
        "--workspace",
        workspace,
        "--script",
        model.path,
        "--network",
        "policy",
        "--allow",
        "mcp__everything__*",
        ...rules.flatMap((rule) => ["--allow", rule]),
        "--json",
        "say hi",
      ],
      env,
    );
    expectExit(result, 0);
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    return { records, seen: [...host.seen], fetched: await readFile(out, "utf8"), port: host.port };
  } finally {
    await host.close();
  }
}

describe("an MCP server with network under --network policy", () => {
  it("reaches an allowed host through its proxy, journaled under mcp_server:NAME", async () => {
    const { records, seen, fetched, port: used } = await runWith([`net(${HOST})`]);
    expect(seen).toEqual(["GET /from-server"]);
    expect(fetched).toContain("hello from the host");
    expect(ofType(records, "net.connection").map((record) => record.data)).toEqual([
      expect.objectContaining({
        call_id: "mcp_server:everything",
        host: HOST,
        port: used,
        decision: "allow",
        rule: `net(${HOST})`,
      }),
    ]);
  });

  it("is refused a host no rule allows: the listener receives nothing and the refusal is journaled", async () => {
    const { records, seen, fetched, port } = await runWith([]);
    expect(seen).toEqual([]);
    expect(fetched).not.toContain("hello from the host");
    expect(ofType(records, "net.connection").map((record) => record.data)).toEqual([
      expect.objectContaining({ call_id: "mcp_server:everything", host: HOST, port, decision: "deny" }),
    ]);
  });
});
