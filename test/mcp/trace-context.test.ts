import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildMcpTools, type McpCaller, type McpCallOptions } from "../../src/mcp/tool.js";
import { withLiveExport } from "../../src/otel/enabled.js";
import { cliLayer } from "../../src/policy/cli-flags.js";
import { buildPolicy } from "../../src/policy/permissions.js";
import { PolicyPermissions } from "../../src/policy/policy-permissions.js";
import { subjectKindOf } from "../../src/policy/subject-kind.js";
import { dirsPerTest } from "../shell/helpers.js";
import { run, tempWorkspace, type Workspace } from "../support/session.js";
import { connectionsPerTest } from "./connection-fixtures.js";

/*
 * A call made while a live OpenTelemetry export is on carries the call span's W3C traceparent in
 * the request's `_meta`, next to the progress token; without one, `_meta` holds nothing more.
 */
const META_SERVER = path.join(import.meta.dirname, "fixtures/meta-server.mjs");
const dirs = dirsPerTest("mcp-trace");
const connect = connectionsPerTest();
const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

const metaOf = (result: unknown): Record<string, unknown> =>
  JSON.parse((result as { content: { text: string }[] }).content[0]?.text ?? "{}");

describe("trace context to MCP servers", () => {
  it("sends the call's traceparent in _meta when given, and none when not", async () => {
    const { connection } = connect(
      { command: process.execPath, args: [META_SERVER], sandbox: "off" },
      dirs.workspace,
    );
    await connection.start();
    const traced = metaOf(await connection.callTool("meta", {}, { traceparent: TRACEPARENT }));
    expect(traced.traceparent).toBe(TRACEPARENT);
    expect(traced.progressToken).toBeDefined();
    const plain = metaOf(await connection.callTool("meta", {}));
    expect(plain.traceparent).toBeUndefined();
    expect(plain.progressToken).toBeDefined();
  }, 30_000);
});

describe("an MCP tool call in a session", () => {
  let ws: Workspace | undefined;
  afterEach(async () => ws?.cleanup());

  const session = async (listener: { traceparent?(callId: string): string | undefined }) => {
    ws = await tempWorkspace();
    const received: McpCallOptions[] = [];
    const caller: McpCaller = {
      callTool: async (_name, _args, options) => {
        received.push(options);
        return { content: [{ type: "text", text: "ok" }] };
      },
    };
    const built = buildMcpTools([
      {
        server: "srv",
        trusted: false,
        toolTimeoutMs: 5000,
        caller,
        tools: [{ name: "look", inputSchema: { type: "object" } }],
      },
    ]);
    const tools = built.entries.map((entry) => entry.tool);
    const permissions = new PolicyPermissions(buildPolicy([cliLayer({ allow: ["mcp__srv__*"] })]), (name) => {
      const tool = tools.find((t) => t.name === name);
      return tool ? subjectKindOf(tool) : undefined;
    });
    await run(ws, {
      tools,
      turns: [{ calls: [{ id: "c1", name: "mcp__srv__look", arguments: {} }] }, { text: "done" }],
      extra: {
        policy: { describe: permissions.describe, digest: permissions.digest, permissions },
        listener,
      },
    });
    return received;
  };

  it("passes the traceparent the listener (a live export) gives for that call to the server", async () => {
    const asked: string[] = [];
    const received = await session({
      traceparent: (callId) => {
        asked.push(callId);
        return TRACEPARENT;
      },
    });
    expect(asked).toEqual(["c1"]);
    expect(received.map((options) => options.traceparent)).toEqual([TRACEPARENT]);
  });

  it("passes none without a live export", async () => {
    const received = await session({});
    expect(received).toHaveLength(1);
    expect(received[0]).not.toHaveProperty("traceparent");
  });
});

describe("a door's listener with a live export", () => {
  it("gives each call the traceparent of its span; without an export there is none", () => {
    const live = {
      record: () => undefined,
      agentRecord: () => undefined,
      traceparentOf: (callId: string) => (callId === "c1" ? TRACEPARENT : undefined),
      shutdown: async () => undefined,
    };
    const listener: { traceparent?(callId: string): string | undefined } = withLiveExport({}, live);
    expect(listener.traceparent?.("c1")).toBe(TRACEPARENT);
    expect(listener.traceparent?.("c2")).toBeUndefined();
    const without: { traceparent?(callId: string): string | undefined } = withLiveExport({}, undefined);
    expect(without.traceparent).toBeUndefined();
  });
});
