import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildMcpTools, type McpCaller, type McpToolListing } from "../../src/mcp/tool.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import { ToolRegistry } from "../../src/runtime/registry.js";
import { Recording, run, scripted, tempWorkspace, type Workspace } from "../support/session.js";

/**
 * The reference servers nobody here wrote, over stdio with the SDK's own client: every tool they
 * list becomes a registrable harness tool, and calls through a session come back normalized.
 */
const require = createRequire(import.meta.url);
const serverScript = (pkg: string) =>
  join(dirname(require.resolve(`@modelcontextprotocol/${pkg}/package.json`)), "dist", "index.js");

async function connect(pkg: string, args: string[]) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [serverScript(pkg), ...args],
    stderr: "pipe",
  });
  const client = new Client({ name: "harness-test", version: "1.0.0" });
  await client.connect(transport);
  const caller: McpCaller = {
    callTool: (name, args, options) =>
      client.callTool({ name, arguments: args }, { signal: options.signal, timeout: options.timeoutMs }),
  };
  const tools = (await client.listTools()).tools as McpToolListing[];
  return { caller, tools, close: () => client.close() };
}

describe("the reference MCP servers' tools", () => {
  let ws: Workspace;
  beforeEach(async () => {
    ws = await tempWorkspace({ "notes.txt": "first\nsecond\n" });
  });
  afterEach(async () => {
    await ws.cleanup();
  });

  it("server-everything: all tools register; echo, an image and structured content come back normalized", async () => {
    const server = await connect("server-everything", ["stdio"]);
    try {
      const { entries, unavailable } = buildMcpTools([
        {
          server: "everything",
          // Trusted: four external calls in one turn are the subject here, and after an untrusted
          // server's first result each further one would ask a person (see test/e2e/web-fetch.test.ts).
          trusted: true,
          toolTimeoutMs: 10_000,
          caller: server.caller,
          tools: server.tools,
        },
      ]);
      expect(unavailable).toEqual([]);
      const tools = entries.map((e) => e.tool);
      const registry = new ToolRegistry();
      for (const tool of tools) registry.register(tool);
      expect(registry.snapshot().names).toContain("mcp__everything__get-tiny-image");
      const provider = new Recording(
        scripted({
          turns: [
            {
              calls: [
                { id: "echo", name: "mcp__everything__echo", arguments: { message: "hi there" } },
                { id: "bad", name: "mcp__everything__echo", arguments: { message: 42 } },
                { id: "image", name: "mcp__everything__get-tiny-image", arguments: {} },
                {
                  id: "structured",
                  name: "mcp__everything__get-structured-content",
                  arguments: { location: "New York" },
                },
              ],
            },
            { text: "done" },
          ],
        }),
      );
      const permissions = modePolicy({ allow: ["mcp__everything__*"] });
      await run(ws, {
        provider,
        tools,
        extra: { policy: { describe: permissions.describe, digest: permissions.digest, permissions } },
      });
      const results = Object.fromEntries(
        (await ws.events("tool.result")).map((r) => {
          const data = r.data as { call_id: string; status: string; content: string; data?: unknown };
          return [data.call_id, data];
        }),
      );
      expect(results.echo).toMatchObject({ status: "ok", content: "Echo: hi there" });
      expect(results.bad).toMatchObject({ status: "invalid", error_type: "INVALID_ARGUMENTS" });
      expect(results.image?.status).toBe("ok");
      expect(results.image?.content).toMatch(
        /\[image: "image\/png", \d+ bytes, stored as artifact [0-9a-f]{64}\]/,
      );
      const imageData = results.image?.data as { artifacts: { id: string }[] } | undefined;
      const stored = imageData?.artifacts[0];
      const png = await readFile(join(ws.root, ".harness", "sessions", "s", "artifacts", stored?.id ?? ""));
      expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
      expect(results.structured?.status).toBe("ok");
      expect(results.structured?.content).toContain("temperature");
    } finally {
      await server.close();
    }
  }, 30_000);

  it("server-filesystem: a trusted server's read-only tools are read_only and run without asking", async () => {
    const server = await connect("server-filesystem", [ws.root]);
    try {
      const { entries, unavailable } = buildMcpTools([
        { server: "fs", trusted: true, toolTimeoutMs: 10_000, caller: server.caller, tools: server.tools },
      ]);
      expect(unavailable).toEqual([]);
      const effects = Object.fromEntries(entries.map((e) => [e.rawName, e.tool.effect]));
      expect(effects).toMatchObject({
        read_text_file: "read_only",
        write_file: "destructive",
        create_directory: "external_side_effect",
      });
      const tools = entries.map((e) => e.tool);
      const permissions = modePolicy({});
      await run(ws, {
        tools,
        turns: [
          {
            calls: [
              {
                id: "read",
                name: "mcp__fs__read_text_file",
                arguments: { path: join(ws.root, "notes.txt") },
              },
              {
                id: "write",
                name: "mcp__fs__write_file",
                arguments: { path: join(ws.root, "x.txt"), content: "x" },
              },
            ],
          },
          { text: "done" },
        ],
        extra: { policy: { describe: permissions.describe, digest: permissions.digest, permissions } },
      });
      const results = (await ws.events("tool.result")).map((r) => r.data as Record<string, unknown>);
      expect(results[0]).toMatchObject({ call_id: "read", status: "ok", content: "first\nsecond\n" });
      // Destructive asks by default; the test approver declines: nothing reached the server.
      expect(results[1]).toMatchObject({ call_id: "write", status: "denied", error_type: "USER_DENIED" });
      await expect(ws.file("x.txt")).rejects.toThrow();
    } finally {
      await server.close();
    }
  }, 30_000);
});
