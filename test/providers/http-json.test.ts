import { describe, expect, it } from "vitest";
import type { ModelMessage, ToolSpec } from "../../src/protocol/types.js";
import { createHttpJsonProvider } from "../../src/providers/http-json.js";
import { calls, collect, endsNormally, lastEnd, request, text } from "./helpers/collect.js";
import { CANARY, JSON_HEADERS, type ScriptedReply, serverPerTest } from "./helpers/server.js";

const servers = serverPerTest();

async function provider(replies: ScriptedReply[], apiKey?: string) {
  const { origin } = await servers.start(replies.map((r) => ({ headers: JSON_HEADERS, ...r })));
  return createHttpJsonProvider({
    url: `${origin}/policy?token=secret`,
    model: "rules-v1",
    ...(apiKey === undefined ? {} : { apiKey }),
  });
}

const json = (value: unknown): ScriptedReply => ({ body: JSON.stringify(value) });

describe("http-json: valid actions", () => {
  it("a tool action becomes one call split into fragments, then end tool_calls", async () => {
    const p = await provider([json({ kind: "tool", name: "stock", args: { item_id: "camera", n: [1, 2] } })]);
    const { events, error } = await collect(p, request({ ordinal: 7 }));
    expect(error).toBeUndefined();
    expect(text(events)).toBe("");
    expect(calls(events)).toEqual([
      { id: "hj-7-0", name: "stock", arguments: '{"item_id":"camera","n":[1,2]}', fragments: 2 },
    ]);
    expect(events.filter((e) => e.type === "tool_call_delta").every((e) => e.arguments !== "")).toBe(true);
    expect(lastEnd(events)).toEqual({ type: "end", reason: "tool_calls" });
  });

  it("empty args still split into two fragments", async () => {
    const p = await provider([json({ kind: "tool", name: "list", args: {} })]);
    const { events } = await collect(p);
    expect(events.filter((e) => e.type === "tool_call_delta").map((e) => e.arguments)).toEqual(["{", "}"]);
  });

  it("a finish action becomes its status as text, then end stop", async () => {
    const p = await provider([json({ kind: "finish", status: "reserved" })]);
    const { events } = await collect(p);
    expect(events).toEqual([
      { type: "text_delta", text: "reserved" },
      { type: "end", reason: "stop" },
    ]);
  });

  it("posts exactly {messages, tools} as JSON with the key as a bearer token", async () => {
    const messages: ModelMessage[] = [
      { role: "user", content: "reserve" },
      {
        role: "assistant",
        content: "",
        calls: [{ id: "hj-0-0", name: "search", arguments: { query: "camera" } }],
      },
      { role: "tool", call_id: "hj-0-0", name: "search", status: "ok", content: "camera" },
    ];
    const tools: ToolSpec[] = [
      { name: "search", description: "Find items.", input_schema: { type: "object" } },
    ];
    const p = await provider([json({ kind: "finish", status: "done" })], CANARY);
    await collect(p, request({ messages, tools }));
    const sent = servers.current.received[0];
    expect(sent?.method).toBe("POST");
    expect(sent?.headers["content-type"]).toBe("application/json");
    expect(sent?.headers.authorization).toBe(`Bearer ${CANARY}`);
    expect(JSON.parse(sent?.body ?? "")).toEqual({ messages, tools });
    expect(p.identity).toEqual({
      kind: "http-json",
      model: "rules-v1",
      base_url: `${servers.current.origin}/policy`,
    });
    expect(JSON.stringify(p.identity)).not.toContain("secret");
  });
});

describe("http-json: rejected actions", () => {
  const cases: [string, ScriptedReply][] = [
    ["an extra field on a tool action", json({ kind: "tool", name: "stock", args: {}, path: "/tmp/secret" })],
    ["an extra field on a finish action", json({ kind: "finish", status: "done", answer: "x" })],
    ["an unknown kind", json({ kind: "shell", command: "rm -rf /" })],
    ["args that are not an object", json({ kind: "tool", name: "stock", args: [1] })],
    ["a missing name", json({ kind: "tool", args: {} })],
    ["an empty status", json({ kind: "finish", status: "" })],
    ["a body that is not JSON", { body: "reserve the camera please" }],
    ["a JSON array", json([{ kind: "finish", status: "done" }])],
  ];
  for (const [what, reply] of cases) {
    it(`rejects ${what} as INVALID_REQUEST invalid_action, with no events`, async () => {
      const p = await provider([reply]);
      const { events, error } = await collect(p);
      expect(events).toEqual([]);
      expect(error).toMatchObject({
        code: "INVALID_REQUEST",
        providerCode: "invalid_action",
        retryable: false,
      });
      expect(endsNormally(events)).toBe(false);
    });
  }

  it("a body nested 250k deep is a non-retryable invalid action saying so, not a stack overflow", async () => {
    const n = 250_000;
    const p = await provider([
      { body: `{"kind":"tool","name":"x","args":{"a":${"[".repeat(n)}${"]".repeat(n)}}}` },
    ]);
    const { events, error } = await collect(p);
    expect(events).toEqual([]);
    expect(error).toMatchObject({
      code: "INVALID_REQUEST",
      providerCode: "invalid_action",
      retryable: false,
    });
    expect(error?.message).toBe(
      "http-json: invalid action: the body is nested deeper than 65 levels (args may nest at most 64)",
    );
  });

  it("args nested as deep as a model's may be pass, one level more is an invalid action; brackets in strings do not count", async () => {
    const deepest = JSON.parse(`${"[".repeat(63)}${"]".repeat(63)}`) as unknown;
    const p = await provider([
      json({ kind: "tool", name: "x", args: { a: deepest } }),
      json({ kind: "tool", name: "x", args: { a: "[".repeat(100_000) } }),
      json({ kind: "tool", name: "x", args: { a: [deepest] } }),
    ]);
    expect((await collect(p)).error).toBeUndefined();
    expect((await collect(p)).error).toBeUndefined();
    expect((await collect(p)).error).toMatchObject({ code: "INVALID_REQUEST", retryable: false });
  });

  it("an empty body is EMPTY_RESPONSE (retryable)", async () => {
    const p = await provider([{ body: "" }]);
    expect((await collect(p)).error).toMatchObject({ code: "EMPTY_RESPONSE", retryable: true });
  });

  it("HTTP errors are classified like any provider's: 503 OVERLOADED with Retry-After, 401 AUTH without the key", async () => {
    const p = await provider(
      [
        {
          status: 503,
          headers: { ...JSON_HEADERS, "retry-after": "2" },
          body: JSON.stringify({ error: { message: "busy" } }),
        },
        { status: 401, body: JSON.stringify({ error: { message: `bad token ${CANARY}` } }) },
      ],
      CANARY,
    );
    expect((await collect(p)).error).toMatchObject({ code: "OVERLOADED", status: 503, retryAfterMs: 2000 });
    const { error } = await collect(p);
    expect(error).toMatchObject({ code: "AUTH", status: 401 });
    expect(JSON.stringify(error)).not.toContain(CANARY);
    expect(error?.message).not.toContain(CANARY);
  });

  it("a cut connection is TRANSPORT", async () => {
    const p = await provider([{ cutAfter: '{"kind":"tool","na' }]);
    expect((await collect(p)).error).toMatchObject({ code: "TRANSPORT", retryable: true });
  });
});
