import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { basisTokens } from "../../src/engine/tokens.js";
import { type DeferSettings, ToolOffer } from "../../src/engine/tool-offer.js";
import type { ToolSurfaceSource } from "../../src/engine/tool-surface.js";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import type { ToolSpec } from "../../src/protocol/types.js";
import type { PermissionPort } from "../../src/runtime/ports.js";
import { ToolRegistry, type ToolSnapshot } from "../../src/runtime/registry.js";
import { createFileTools } from "../../src/tools/builtin.js";
import { type AnyTool, defineTool } from "../../src/tools/tool.js";
import { Recording, run, scripted, tempWorkspace, type Workspace } from "../support/session.js";

/**
 * Deferred tools: with a large catalog the model is offered the built-ins and tool_search, loads
 * what it searched for (journaled, appended after the stable prefix), and every call is still
 * decided at call time. The catalog is the fixture MCP server's (test/fixtures/many-tools).
 */

interface CatalogTool {
  name: string;
  description: string;
  /** Parameter name → [type, description]. */
  params: Record<string, [string, string]>;
}

const CATALOG: CatalogTool[] = JSON.parse(
  readFileSync(new URL("../fixtures/many-tools/catalog.json", import.meta.url), "utf8"),
);
const QUERIES: [string, string][] = JSON.parse(
  readFileSync(new URL("../fixtures/many-tools/queries.json", import.meta.url), "utf8"),
);
const PREFIX = "mcp__many__";

/** What ran: tool name → calls executed. */
let executed: Map<string, number>;

function catalogTool(tool: CatalogTool, description = tool.description): AnyTool {
  const shape: Record<string, z.ZodType> = {};
  for (const [param, [type, about]] of Object.entries(tool.params))
    shape[param] = (type === "integer" ? z.number().int() : type === "boolean" ? z.boolean() : z.unknown())
      .describe(about)
      .optional();
  const name = `${PREFIX}${tool.name}`;
  return defineTool({
    name,
    description,
    version: "1",
    input: z.strictObject(shape),
    effect: "read_only",
    idempotency: "idempotent",
    timeoutMs: 1_000,
    resources: () => ({ read: [], write: [] }),
    concurrencySafe: () => true,
    async execute() {
      executed.set(name, (executed.get(name) ?? 0) + 1);
      return { summary: `${name} ok`, content: `${name} ok` };
    },
  });
}

const manyTools = () => [...createFileTools(), ...CATALOG.map((tool) => catalogTool(tool))];
const BUILTINS = createFileTools().map((tool) => tool.name);
const settings = (mode: DeferSettings["mode"] = "auto"): DeferSettings => ({
  mode,
  alwaysLoad: (name) => !name.startsWith("mcp__"),
});

function snapshotOf(tools: AnyTool[]): ToolSnapshot {
  const registry = new ToolRegistry();
  for (const tool of tools) registry.register(tool);
  return registry.snapshot();
}

const tokensOf = (specs: readonly ToolSpec[]) => basisTokens(Buffer.byteLength(JSON.stringify(specs)));
const namesOf = (specs: readonly ToolSpec[]) => specs.map((spec) => spec.name);
const resultOf = (records: AnyRecord[], callId: string) =>
  records.find((r) => r.type === "tool.result" && r.data.call_id === callId)?.data as
    | Record<string, unknown>
    | undefined;
const call = (id: string, name: string, args: Record<string, unknown> = {}) => ({
  calls: [{ id, name, arguments: args }],
});
const search = (id: string, query: string, limit?: number) =>
  call(id, "tool_search", { query, ...(limit !== undefined ? { limit } : {}) });

let ws: Workspace;
beforeEach(async () => {
  executed = new Map();
  ws = await tempWorkspace({ "hello.txt": "hi\n" });
});
afterEach(async () => ws.cleanup());

describe("deferred tools with a large catalog (auto)", () => {
  it("offers the built-ins and tool_search, loads what was searched for after the prefix, and runs it", async () => {
    const steps = [
      search("s1", "send a direct message to a colleague on slack", 3),
      call("c1", `${PREFIX}slack_send_direct_message`, { user: "ann", text: "hi" }),
      { text: "done" },
    ];
    const model = new Recording(scripted({ script: (_m, step) => steps[step] }));
    const summary = await run(ws, { provider: model, tools: manyTools(), extra: { deferTools: settings() } });
    expect(summary.status).toBe("unverified");

    const [first, second, third] = model.requests.map((request) => request.tools);
    expect(namesOf(first!)).toEqual([...BUILTINS, "tool_search"]);
    // The first request's definitions are at most a tenth of sending every tool up front.
    const all = snapshotOf(manyTools()).specs;
    expect(all).toHaveLength(BUILTINS.length + CATALOG.length);
    expect(tokensOf(first!)).toBeLessThanOrEqual(tokensOf(all) * 0.1);

    const records = await ws.journal();
    const loads = records.filter((r) => r.type === "tools.loaded");
    expect(loads).toHaveLength(1);
    const loaded = loads[0]!.data as { names: string[]; digests: string[]; call_id: string };
    expect(loaded.call_id).toBe("s1");
    expect(loaded.names).toContain(`${PREFIX}slack_send_direct_message`);
    expect(loaded.names.length).toBeLessThanOrEqual(3);
    expect(loaded.digests).toHaveLength(loaded.names.length);
    // Durable before the search's result: a resume sees the load with the call that made it.
    expect(loads[0]!.seq).toBeLessThan(records.find((r) => r.type === "tool.result")!.seq);
    expect(resultOf(records, "s1")).toMatchObject({
      status: "ok",
      data: {
        loaded: loaded.names,
        tools: expect.arrayContaining([expect.objectContaining({ name: loaded.names[0] })]),
      },
    });

    // The next request: the first one's definitions byte for byte, then the loads in order.
    const prefix = JSON.stringify(first);
    expect(JSON.stringify(second!.slice(0, first!.length))).toBe(prefix);
    expect(namesOf(second!.slice(first!.length))).toEqual(loaded.names);
    expect(JSON.stringify(third)).toBe(JSON.stringify(second));
    expect(resultOf(records, "c1")).toMatchObject({ status: "ok" });
    expect(executed.get(`${PREFIX}slack_send_direct_message`)).toBe(1);
  });

  it("refuses a call to a tool that exists but is not loaded with TOOL_NOT_LOADED, naming tool_search, and runs nothing", async () => {
    const steps = [call("c1", `${PREFIX}email_send`, { to: ["a@example.com"] }), { text: "done" }];
    const model = new Recording(scripted({ script: (_m, step) => steps[step] }));
    await run(ws, { provider: model, tools: manyTools(), extra: { deferTools: settings() } });
    const records = await ws.journal();
    const result = resultOf(records, "c1");
    expect(result).toMatchObject({ status: "invalid", error_type: "TOOL_NOT_LOADED" });
    expect(String(result?.content)).toContain("tool_search");
    expect(records.some((r) => r.type === "tool.started" && r.data.call_id === "c1")).toBe(false);
    expect(executed.size).toBe(0);
    // Paired with its call: the model reads the refusal in the next request.
    const observation = model.requests[1]!.messages.find((m) => m.role === "tool");
    expect(JSON.stringify(observation)).toContain("TOOL_NOT_LOADED");
    expect(records.some((r) => r.type === "tools.loaded")).toBe(false);
  });

  it("a tool the policy denies outright is never found, and a call to it is denied by the policy", async () => {
    const denied = `${PREFIX}email_send`;
    const policy = modePolicy({ write: "allow", readOnly: false, deny: [denied] });
    const steps = [
      search("s1", denied, 20),
      search("s2", "send an email to recipients with a subject", 20),
      call("c1", denied, { to: ["a@example.com"] }),
      { text: "done" },
    ];
    const model = new Recording(scripted({ script: (_m, step) => steps[step] }));
    await run(ws, {
      provider: model,
      tools: manyTools(),
      extra: {
        deferTools: settings(),
        policy: { describe: policy.describe, digest: policy.digest, permissions: policy },
      },
    });
    const records = await ws.journal();
    for (const id of ["s1", "s2"]) {
      const found = (resultOf(records, id)!.data as { tools: { name: string }[] }).tools.map((t) => t.name);
      expect(found).not.toContain(denied);
    }
    expect(resultOf(records, "s2")?.status).toBe("ok");
    const loadedNames = records
      .filter((r) => r.type === "tools.loaded")
      .flatMap((r) => r.data.names as string[]);
    expect(loadedNames).not.toContain(denied);
    for (const request of model.requests) expect(namesOf(request.tools)).not.toContain(denied);
    expect(resultOf(records, "c1")).toMatchObject({ status: "denied", error_type: "POLICY_DENIED" });
    expect(executed.size).toBe(0);
  });

  it("a tool denied after it was loaded is denied when called (loading grants nothing)", async () => {
    const target = `${PREFIX}stripe_capture_payment`;
    const policy = modePolicy({ write: "allow", readOnly: false });
    let withdrawn = false;
    // A policy reloaded mid-session (or a child's narrower grant): decided at every call.
    const permissions: PermissionPort = {
      decide: (request) =>
        withdrawn && request.tool === target
          ? { decision: "deny", source: "test", reason: "withdrawn after loading", rule: `deny ${target}` }
          : policy.decide(request),
    };
    const steps = [search("s1", target, 1), call("c1", target, { payment_id: "p1" }), { text: "done" }];
    const model = new Recording(
      scripted({
        script: (_m, step) => {
          if (step === 1) withdrawn = true;
          return steps[step];
        },
      }),
    );
    await run(ws, {
      provider: model,
      tools: manyTools(),
      extra: {
        deferTools: settings(),
        policy: { describe: policy.describe, digest: policy.digest, permissions },
      },
    });
    const records = await ws.journal();
    expect(records.find((r) => r.type === "tools.loaded")?.data.names).toEqual([target]);
    expect(namesOf(model.requests[1]!.tools)).toContain(target);
    expect(resultOf(records, "c1")).toMatchObject({ status: "denied", error_type: "POLICY_DENIED" });
    expect(executed.size).toBe(0);
  });

  it("refuses a loaded tool whose definition changed with TOOL_SCHEMA_CHANGED and the new digest; a search for its name loads it again", async () => {
    const target = `${PREFIX}weather_get_forecast`;
    const changed = manyTools().map((tool) =>
      tool.name === target
        ? catalogTool(CATALOG.find((t) => `${PREFIX}${t.name}` === target)!, "Weather forecast, now hourly.")
        : tool,
    );
    const next = snapshotOf(changed);
    let replies = 0;
    // The server changes the tool's schema once the model has loaded it.
    const source: ToolSurfaceSource = {
      async refresh(current) {
        replies += 1;
        return replies > 1 && current !== next ? next : undefined;
      },
    };
    const steps = [
      search("s1", "weather forecast for a city", 1),
      call("c1", target, { city: "Paris" }),
      search("s2", target, 1),
      call("c2", target, { city: "Paris" }),
      { text: "done" },
    ];
    const model = new Recording(scripted({ script: (_m, step) => steps[step] }));
    await run(ws, {
      provider: model,
      tools: manyTools(),
      extra: { deferTools: settings(), toolSurface: source },
    });
    const records = await ws.journal();
    const loads = records.filter((r) => r.type === "tools.loaded").map((r) => r.data);
    expect(loads).toHaveLength(2);
    expect(loads.map((l) => l.names)).toEqual([[target], [target]]);
    expect(loads[1]!.digests[0]).not.toBe(loads[0]!.digests[0]);
    // The stale definition is not offered; the refusal carries the new definition's digest.
    expect(namesOf(model.requests[1]!.tools)).not.toContain(target);
    expect(resultOf(records, "c1")).toMatchObject({
      error_type: "TOOL_SCHEMA_CHANGED",
      data: { tool: target, loaded_digest: loads[0]!.digests[0], digest: loads[1]!.digests[0] },
    });
    const offered = model.requests[3]!.tools.find((spec) => spec.name === target);
    expect(offered?.description).toBe("Weather forecast, now hourly.");
    expect(resultOf(records, "c2")).toMatchObject({ status: "ok" });
    expect(executed.get(target)).toBe(1);
  });

  it("a resumed session offers exactly what was loaded", async () => {
    const script = (_m: unknown, step: number) =>
      [search("s1", "kubernetes pod logs", 2), { text: "first turn done" }, { text: "second turn done" }][
        step
      ];
    const first = new Recording(scripted({ script }));
    await run(ws, { provider: first, tools: manyTools(), extra: { deferTools: settings() } });
    const second = new Recording(scripted({ script }));
    const summary = await run(ws, {
      provider: second,
      tools: manyTools(),
      mode: "resume",
      extra: { deferTools: settings(), input: "and again" },
    });
    expect(summary.status).toBe("unverified");
    const before = first.requests.at(-1)!.tools;
    expect(before.length).toBe(BUILTINS.length + 1 + 2);
    expect(JSON.stringify(second.requests[0]!.tools)).toBe(JSON.stringify(before));
  });
});

describe("a tool_search cut by a crash", () => {
  it("is searched again on resume (reconciled, the load journaled), not left an unknown outcome", async () => {
    const steps = [search("s1", "translate text to french", 1), { text: "done" }];
    const script = (_m: unknown, step: number) => steps[step];
    const first = await run(ws, {
      script,
      tools: manyTools(),
      limits: { maxToolCalls: 0 },
      extra: { deferTools: settings() },
    });
    expect(first.reason).toBe("budget_exhausted");
    // As a process killed right after the search's intent was durable would leave it.
    const writer = await ws.store.openWriter("s", { create: false });
    await writer.append([
      {
        type: "tool.started",
        data: {
          call_id: "s1",
          name: "tool_search",
          arguments: { query: "translate text to french", limit: 1 },
          arguments_hash: "0".repeat(64),
          tool_version: "1",
          schema_digest: "0".repeat(64),
          effect: "read_only",
          batch: 0,
        },
      },
    ]);
    await writer.close();
    const model = new Recording(scripted({ script }));
    const summary = await run(ws, {
      provider: model,
      tools: manyTools(),
      mode: "resume",
      extra: { deferTools: settings() },
    });
    expect(summary.status).toBe("unverified");
    const records = await ws.journal();
    expect(resultOf(records, "s1")).toMatchObject({ status: "ok", data: { reconciled: true } });
    expect(records.find((r) => r.type === "tools.loaded")?.data.names).toEqual([`${PREFIX}translate_text`]);
    expect(namesOf(model.requests[0]!.tools).at(-1)).toBe(`${PREFIX}translate_text`);
  });
});

describe("--defer-tools modes", () => {
  it("never: every tool up front, no tool_search", async () => {
    const model = new Recording(scripted({ turns: [{ text: "done" }] }));
    // All of them need a large window: the default one could not hold the request.
    await run(ws, {
      provider: model,
      tools: manyTools(),
      limits: { contextWindowTokens: 200_000 },
      extra: { deferTools: settings("never") },
    });
    expect(namesOf(model.requests[0]!.tools)).toEqual(snapshotOf(manyTools()).names);
    expect(namesOf(model.requests[0]!.tools)).not.toContain("tool_search");
  });

  it("always: defers even a small catalog; auto leaves a small one whole", async () => {
    const small = () => [...createFileTools(), ...CATALOG.slice(0, 3).map((tool) => catalogTool(tool))];
    const always = new Recording(scripted({ turns: [{ text: "done" }] }));
    await run(ws, { provider: always, tools: small(), extra: { deferTools: settings("always") } });
    expect(namesOf(always.requests[0]!.tools)).toEqual([...BUILTINS, "tool_search"]);

    const auto = new Recording(scripted({ turns: [{ text: "done" }] }));
    await run(ws, { provider: auto, tools: small(), session: "t", extra: { deferTools: settings("auto") } });
    expect(namesOf(auto.requests[0]!.tools)).toEqual(snapshotOf(small()).names);
  });

  it("auto defers a few tools whose definitions exceed a tenth of the context window", async () => {
    const big = CATALOG.slice(0, 5).map((tool) =>
      catalogTool(tool, `${tool.description} ${"detail ".repeat(400)}`),
    );
    const model = new Recording(scripted({ turns: [{ text: "done" }] }));
    await run(ws, {
      provider: model,
      tools: [...createFileTools(), ...big],
      limits: { contextWindowTokens: 20_000 },
      extra: { deferTools: settings("auto") },
    });
    expect(namesOf(model.requests[0]!.tools)).toEqual([...BUILTINS, "tool_search"]);
  });
});

describe("tool_search ranking", () => {
  it("finds the expected tool in the top 5 for at least 18 of 20 fixed queries", () => {
    const surface = snapshotOf(manyTools());
    const offer = new ToolOffer(settings(), 128_000, () => false);
    const misses: string[] = [];
    for (const [query, expected] of QUERIES) {
      const found = offer.search(surface, query, 5).map((match) => match.name);
      if (!found.includes(`${PREFIX}${expected}`)) misses.push(`${query} → ${found.join(", ")}`);
    }
    expect(QUERIES).toHaveLength(20);
    expect(misses.length, misses.join("\n")).toBeLessThanOrEqual(2);
  });

  it("never ranks a built-in or a denied tool, and an exact name comes first", () => {
    const surface = snapshotOf(manyTools());
    const denied = `${PREFIX}s3_delete_bucket`;
    const offer = new ToolOffer(settings(), 128_000, (name) => name === denied);
    expect(offer.search(surface, "delete an s3 bucket", 20).map((m) => m.name)).not.toContain(denied);
    expect(offer.search(surface, "read a file", 20).map((m) => m.name)).not.toContain("read_file");
    expect(offer.search(surface, `${PREFIX}jira_get_epic`, 5)[0]?.name).toBe(`${PREFIX}jira_get_epic`);
    expect(offer.search(surface, "jira_get_epic", 5)[0]?.name).toBe(`${PREFIX}jira_get_epic`);
  });
});
