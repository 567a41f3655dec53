import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MockReply, writeReply } from "../e2e-providers/wire.js";
import {
  ensureBuilt,
  expectExit,
  harness,
  jsonSummary,
  ofType,
  REPO_ROOT,
  readJournal,
  removeTempDirs,
  resultsByCall,
  workspaceWith,
} from "./helpers.js";
import { everything, NODE_MODULES, run, userConfig } from "./mcp-run-support.js";

/**
 * Deferred tools through the built CLI: the reference MCP server and a fixture server listing 212
 * tools, a loopback Chat Completions model that keeps every request body. What the model was sent
 * is what is asserted: the first request's tool definitions, the load, the next request's.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const MANY = join(REPO_ROOT, "test/fixtures/many-tools");

interface WireTool {
  type: "function";
  function: { name: string; description?: string; parameters?: unknown };
}

/** A loopback model answering `replies` in order (then "done"), keeping each request's tools. */
async function model(replies: Exclude<MockReply, { kind: "stall" }>[]) {
  const requests: { tools: WireTool[] }[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (chunk: string) => {
      body += chunk;
    });
    req.on("end", () => {
      const parsed = JSON.parse(body) as { tools?: WireTool[] };
      requests.push({ tools: parsed.tools ?? [] });
      const reply = replies[requests.length - 1] ?? { kind: "text", text: "done" };
      const wire = writeReply("chat", reply);
      res.writeHead(wire.status, wire.headers);
      res.end("body" in wire ? wire.body : "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

async function configFor(baseUrl: string, log: string) {
  return userConfig({
    models: {
      local: { provider: "openai-compatible", model: "m", base_url: baseUrl, context_window: 400_000 },
    },
    default_profile: "local",
    mcp_servers: {
      everything: everything(),
      many: {
        command: process.execPath,
        args: [join(MANY, "server.mjs")],
        env: { MANY_LOG: log },
        read_paths: [MANY, NODE_MODULES],
      },
    },
  });
}

const names = (tools: readonly WireTool[]) => tools.map((tool) => tool.function.name);
const tokens = (tools: readonly WireTool[]) => Math.ceil(Buffer.byteLength(JSON.stringify(tools)) / 4);

describe("deferred tools with about 200 MCP tools (harness run)", () => {
  it("sends a tenth of the definitions, loads what tool_search found after the prefix, and the loaded tool runs", async () => {
    const all = await model([{ kind: "text", text: "done" }]);
    const deferred = await model([
      {
        kind: "calls",
        calls: [{ id: "s1", name: "tool_search", args: { query: "weather forecast for a city", limit: 2 } }],
      },
      {
        kind: "calls",
        calls: [{ id: "c1", name: "mcp__many__weather_get_forecast", args: { city: "Paris" } }],
      },
    ]);
    try {
      // Everything up front (--defer-tools never): the baseline.
      const wsAll = await workspaceWith({});
      const configAll = await configFor(all.baseUrl, join(wsAll, "many.log"));
      const baseline = await run(
        ["run", "--workspace", wsAll, "--defer-tools", "never", "--json", "look"],
        configAll.env,
      );
      expectExit(baseline, 0);
      const upFront = all.requests[0]!.tools;
      expect(upFront.length).toBeGreaterThanOrEqual(200);
      expect(names(upFront)).not.toContain("tool_search");
      expect(names(upFront).filter((n) => n.startsWith("mcp__everything__")).length).toBeGreaterThan(0);

      const workspace = await workspaceWith({});
      const log = join(workspace, "many.log");
      const { env } = await configFor(deferred.baseUrl, log);
      const result = await run(
        ["run", "--workspace", workspace, "--allow", "mcp__many__*", "--json", "weather in Paris"],
        env,
      );
      expectExit(result, 0);
      const [first, second, third] = deferred.requests.map((request) => request.tools);
      expect(names(first!).some((n) => n.startsWith("mcp__"))).toBe(false);
      expect(names(first!).at(-1)).toBe("tool_search");
      expect(tokens(first!)).toBeLessThanOrEqual(tokens(upFront) * 0.1);

      const records = await readJournal(workspace, String(jsonSummary(result).session));
      const loads = ofType(records, "tools.loaded");
      expect(loads).toHaveLength(1);
      const loaded = loads[0]!.data.names as string[];
      expect(loaded).toContain("mcp__many__weather_get_forecast");
      // The next request: the first one's definitions byte for byte, the loads appended.
      expect(JSON.stringify(second!.slice(0, first!.length))).toBe(JSON.stringify(first));
      expect(names(second!.slice(first!.length))).toEqual(loaded);
      expect(JSON.stringify(third)).toBe(JSON.stringify(second));
      expect(resultsByCall(records).get("s1")).toMatchObject({ status: "ok", data: { loaded } });
      expect(resultsByCall(records).get("c1")).toMatchObject({ status: "ok" });
      expect(readFileSync(log, "utf8")).toContain('call weather_get_forecast {"city":"Paris"}');
    } finally {
      await all.close();
      await deferred.close();
    }
  }, 120_000);

  it("a call to a tool that is not loaded is refused with TOOL_NOT_LOADED and never reaches the server", async () => {
    const deferred = await model([
      {
        kind: "calls",
        calls: [{ id: "c1", name: "mcp__many__email_send", args: { to: ["a@example.com"] } }],
      },
    ]);
    try {
      const workspace = await workspaceWith({});
      const log = join(workspace, "many.log");
      const { env } = await configFor(deferred.baseUrl, log);
      const result = await run(
        ["run", "--workspace", workspace, "--allow", "mcp__many__*", "--json", "mail"],
        env,
      );
      expectExit(result, 0);
      const records = await readJournal(workspace, String(jsonSummary(result).session));
      expect(resultsByCall(records).get("c1")).toMatchObject({ error_type: "TOOL_NOT_LOADED" });
      expect(String(resultsByCall(records).get("c1")?.content)).toContain("tool_search");
      expect(existsSync(log) ? readFileSync(log, "utf8") : "").not.toContain("call email_send");
    } finally {
      await deferred.close();
    }
  }, 120_000);
});

describe("--defer-tools", () => {
  it("is in run --help, and a value other than auto, always or never is a usage error before anything runs", async () => {
    const help = await harness(["run", "--help"]);
    expectExit(help, 0);
    expect(help.stdout).toContain("--defer-tools MODE");
    const workspace = await workspaceWith({});
    const bad = await harness(["run", "--workspace", workspace, "--defer-tools", "sometimes", "x"]);
    expectExit(bad, 64);
    expect(bad.stderr).toContain("--defer-tools");
  });
});
