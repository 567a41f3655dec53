import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import { Engine } from "../src/engine/engine.js";
import { basisTokens } from "../src/engine/tokens.js";
import type { DeferMode } from "../src/engine/tool-offer.js";
import { MemoryJournalStore } from "../src/journal/memory-store.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import type { ToolSpec } from "../src/protocol/types.js";
import { chatRequestBody } from "../src/providers/chat-completions-wire.js";
import type { ModelRequest, Provider } from "../src/providers/provider.js";
import { ScriptedProvider } from "../src/providers/scripted/provider.js";
import { ToolRegistry } from "../src/runtime/registry.js";
import { sha256Hex } from "../src/shared/hash.js";
import { createFileTools } from "../src/tools/builtin.js";
import { type AnyTool, defineTool } from "../src/tools/tool.js";
import { DiskWorkspaceFs } from "../src/workspace/disk-fs.js";
import { type BenchRow, round } from "./stats.js";

/**
 * Deferred tools (issue 32): a session with the built-ins and 212 MCP-like tools (the fixture
 * server's catalog, test/fixtures/many-tools), five requests with two loads. (a) The first
 * request's tool-definition tokens deferred against all up front. (b) The share of each request
 * that repeats the previous one byte for byte (what a provider's prompt cache can serve), with
 * loads appended after the prefix, against the same loads placed in catalog order (what
 * rebuilding the list would send), and against everything up front.
 */

interface CatalogTool {
  name: string;
  description: string;
  params: Record<string, [string, string]>;
}

const CATALOG_FILE = new URL("../../test/fixtures/many-tools/catalog.json", import.meta.url);

function catalogTools(): AnyTool[] {
  const catalog: CatalogTool[] = JSON.parse(readFileSync(CATALOG_FILE, "utf8"));
  return catalog.map((tool) => {
    const shape: Record<string, z.ZodType> = {};
    for (const [param, [type, about]] of Object.entries(tool.params))
      shape[param] = (type === "integer" ? z.number().int() : type === "boolean" ? z.boolean() : z.unknown())
        .describe(about)
        .optional();
    return defineTool({
      name: `mcp__many__${tool.name}`,
      description: tool.description,
      version: "1",
      input: z.strictObject(shape),
      effect: "read_only",
      idempotency: "idempotent",
      timeoutMs: 1_000,
      resources: () => ({ read: [], write: [] }),
      concurrencySafe: () => true,
      async execute() {
        return { summary: `${tool.name} ok`, content: `${tool.name} ok` };
      },
    });
  });
}

/** Five requests: search, call, search, call, done (two loads). */
const STEPS = [
  {
    calls: [{ id: "s1", name: "tool_search", arguments: { query: "weather forecast for a city", limit: 2 } }],
  },
  { calls: [{ id: "c1", name: "mcp__many__weather_get_forecast", arguments: { city: "Paris" } }] },
  {
    calls: [{ id: "s2", name: "tool_search", arguments: { query: "scale kubernetes deployment", limit: 2 } }],
  },
  { calls: [{ id: "c2", name: "mcp__many__kubernetes_scale_deployment", arguments: { replicas: 3 } }] },
  { text: "done" },
];

async function session(root: string, mode: DeferMode): Promise<ModelRequest[]> {
  const registry = new ToolRegistry();
  const builtins = createFileTools();
  for (const tool of [...builtins, ...catalogTools()]) registry.register(tool);
  const builtinNames = new Set(builtins.map((tool) => tool.name));
  const policy = modePolicy({ write: "allow" });
  const sent: ModelRequest[] = [];
  const scripted = ScriptedProvider.fromFunction((_m, step) => STEPS[step], "bench-tools");
  const provider: Provider = {
    identity: scripted.identity,
    stream(request, signal) {
      sent.push(structuredClone(request));
      return scripted.stream(request, signal);
    },
  };
  const engine = new Engine({
    sessionId: `tools-${mode}`,
    store: new MemoryJournalStore(),
    provider,
    runtime: {
      snapshot: registry.snapshot(),
      fs: await DiskWorkspaceFs.create(root),
      hostRoot: root,
      artifacts: new MemoryArtifactStore(),
      approver: { request: async () => ({ decision: "deny", scope: "once", by: "bench" }) },
    },
    workspace: { name: "bench", fingerprint: sha256Hex(root) },
    goal: "use two tools from a large catalog",
    policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
    acceptance: [],
    limits: { contextWindowTokens: 400_000 },
    mode: "new",
    harnessVersion: "bench",
    deferTools: { mode, alwaysLoad: (name) => builtinNames.has(name) },
  });
  const summary = await engine.run();
  // With everything up front tool_search is not offered (its two calls are UNKNOWN_TOOL): five requests still.
  if (sent.length !== STEPS.length)
    throw new Error(`tools bench session (${mode}) ended early: ${summary.status} (${summary.reason})`);
  return sent;
}

const tokens = (specs: readonly ToolSpec[]) => basisTokens(Buffer.byteLength(JSON.stringify(specs)));

/** The Chat Completions body in the order a provider caches it: tool definitions, then messages. */
function cachedText(request: ModelRequest, tools: readonly ToolSpec[] = request.tools): string {
  const body = chatRequestBody({
    model: "bench",
    messages: request.messages,
    tools,
    cacheKey: request.cacheKey,
  });
  return JSON.stringify([body.model, body.tools]) + JSON.stringify(body.messages);
}

function commonPrefix(a: string, b: string): number {
  const max = Math.min(a.length, b.length);
  let i = 0;
  while (i < max && a.charCodeAt(i) === b.charCodeAt(i)) i += 1;
  return i;
}

/** Mean share of each request (after the first) that repeats the previous one byte for byte. */
function prefixShare(texts: readonly string[]): number {
  const shares = texts.slice(1).map((text, i) => commonPrefix(texts[i] as string, text) / text.length);
  return shares.reduce((sum, share) => sum + share, 0) / shares.length;
}

export async function benchToolsCatalog(): Promise<BenchRow[]> {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-tools-")));
  try {
    const deferred = await session(root, "auto");
    const upFront = await session(root, "never");
    const firstDeferred = tokens(deferred[0]!.tools);
    const firstAll = tokens(upFront[0]!.tools);
    // The same requests with the loaded tools in catalog order instead of appended.
    const order = new Map(
      [...deferred[0]!.tools, ...upFront[0]!.tools].map((spec, i) => [spec.name, i] as const).reverse(),
    );
    const rebuilt = deferred.map((request) =>
      cachedText(
        request,
        [...request.tools].sort((a, b) => (order.get(a.name) ?? -1) - (order.get(b.name) ?? -1)),
      ),
    );
    const sentTokens = (requests: readonly ModelRequest[]) =>
      requests.reduce((sum, request) => sum + basisTokens(Buffer.byteLength(cachedText(request))), 0);
    return [
      { name: "tools in the catalog", value: upFront[0]!.tools.length, unit: "" },
      { name: "first request tool tokens, all up front", value: firstAll, unit: "tok" },
      { name: "first request tool tokens, deferred", value: firstDeferred, unit: "tok" },
      {
        name: "deferred / all up front",
        value: round((100 * firstDeferred) / firstAll, 1),
        unit: "%",
        note: "goal ≤ 10%",
      },
      {
        name: "cacheable prefix share, deferred (appended loads)",
        value: round(100 * prefixShare(deferred.map((request) => cachedText(request))), 1),
        unit: "%",
        note: "5 requests, 2 loads",
      },
      {
        name: "cacheable prefix share, loads in catalog order",
        value: round(100 * prefixShare(rebuilt), 1),
        unit: "%",
        note: "what rebuilding the list would keep",
      },
      {
        name: "cacheable prefix share, all up front",
        value: round(100 * prefixShare(upFront.map((request) => cachedText(request))), 1),
        unit: "%",
      },
      { name: "input sent over 5 requests, deferred", value: sentTokens(deferred), unit: "tok" },
      { name: "input sent over 5 requests, all up front", value: sentTokens(upFront), unit: "tok" },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
