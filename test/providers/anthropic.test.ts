import { describe, expect, it } from "vitest";
import type { ModelMessage, StreamEvent } from "../../src/protocol/types.js";
import { createAnthropicProvider } from "../../src/providers/anthropic.js";
import {
  calls,
  collect,
  endsNormally,
  lastEnd,
  READ_SCHEMA,
  READ_TOOLS,
  request,
  text,
} from "./helpers/collect.js";
import {
  CANARY,
  fixture,
  JSON_HEADERS,
  type ScriptedReply,
  SSE_HEADERS,
  serverPerTest,
  sse,
} from "./helpers/server.js";

const servers = serverPerTest();

async function provider(
  replies: ScriptedReply[],
  options: { apiKey?: string; thinkingBudgetTokens?: number } = {},
) {
  const { origin } = await servers.start(replies);
  return createAnthropicProvider({
    model: "claude-test",
    baseUrl: `${origin}/v1`,
    maxOutputTokens: 2048,
    ...options,
  });
}

const start = {
  type: "message_start",
  message: {
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude-test",
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 20, output_tokens: 1 },
  },
};
const toolStart = (index: number, id: string, name: string) => ({
  type: "content_block_start",
  index,
  content_block: { type: "tool_use", id, name, input: {} },
});
const json = (index: number, partial: string) => ({
  type: "content_block_delta",
  index,
  delta: { type: "input_json_delta", partial_json: partial },
});
const stop = (index: number) => ({ type: "content_block_stop", index });
const messageDelta = (reason: string) => ({
  type: "message_delta",
  delta: { stop_reason: reason, stop_sequence: null },
  usage: { output_tokens: 30, cache_read_input_tokens: 5 },
});
const ping = { type: "ping" };
const framed = (events: Record<string, unknown>[]) =>
  sse(events.map((data) => ({ event: String(data.type), data })));

function reasoningOf(events: readonly StreamEvent[]): { text: string; signature?: string } {
  let textSoFar = "";
  let signature: string | undefined;
  for (const e of events) {
    if (e.type !== "reasoning_delta") continue;
    textSoFar += e.text;
    if (e.signature !== undefined) signature = e.signature;
  }
  return signature === undefined ? { text: textSoFar } : { text: textSoFar, signature };
}

describe("anthropic: recorded streams", () => {
  it("text with a ping inside ends stop, with usage", async () => {
    const p = await provider([{ body: fixture("anthropic/text.sse") }]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    expect(text(events)).toBe("- Captain\n- Scoop");
    expect(events.slice(-2)).toEqual([
      {
        type: "usage",
        usage: { input_tokens: 17, output_tokens: 10, cached_tokens: 0, cache_write_tokens: 0 },
      },
      { type: "end", reason: "stop" },
    ]);
  });

  it("text then tool_use split over input_json_delta (first one empty) ends tool_calls", async () => {
    const p = await provider([{ body: fixture("anthropic/text-then-tool-use.sse") }]);
    const { events } = await collect(p);
    expect(text(events)).toContain("get_current_temperature function");
    const [call, ...rest] = calls(events);
    expect(rest).toEqual([]);
    expect(call).toMatchObject({ id: "toolu_01Lfr3kUnHMZApePPRWMv1uS", name: "get_current_temperature" });
    expect(JSON.parse(call?.arguments ?? "")).toEqual({ city: "San Francisco" });
    expect(call?.fragments).toBe(5);
    expect(lastEnd(events)).toEqual({ type: "end", reason: "tool_calls" });
  });

  it("thinking streams as reasoning (never as text), the signature arrives on a reasoning_delta", async () => {
    const p = await provider([{ body: fixture("anthropic/thinking-signature.sse") }]);
    const { events } = await collect(p);
    const reasoning = reasoningOf(events);
    expect(reasoning.text.startsWith("This is a straightforward question about pedestrian safety")).toBe(
      true,
    );
    expect(reasoning.signature?.startsWith("EvMCCkYICxgCKkCHP2cSuEdcJK")).toBe(true);
    expect(text(events)).not.toContain("straightforward question");
    expect(text(events)).toContain("crossing streets.");
    expect(lastEnd(events)?.reason).toBe("stop");
  });

  it("max_tokens never ends normally", async () => {
    const p = await provider([{ body: fixture("anthropic/max-tokens.sse") }]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    expect(endsNormally(events)).toBe(false);
    expect(lastEnd(events)?.reason).toBe("length");
    expect(events).toContainEqual({
      type: "usage",
      usage: { input_tokens: 300, output_tokens: 300, cached_tokens: 0, cache_write_tokens: 0 },
    });
  });

  it("an overloaded error event in a 200 stream is OVERLOADED", async () => {
    const p = await provider([{ body: fixture("anthropic/error-event-overloaded.sse") }]);
    const { events, error } = await collect(p);
    expect(error).toMatchObject({ code: "OVERLOADED", retryable: true, providerCode: "overloaded_error" });
    expect(lastEnd(events)).toBeUndefined();
  });
});

describe("anthropic: scripted streams", () => {
  it("parallel tool_use blocks with pings between fragments", async () => {
    const body = framed([
      start,
      toolStart(0, "toolu_a", "read"),
      json(0, ""),
      json(0, '{"path":'),
      ping,
      json(0, '"a"}'),
      stop(0),
      toolStart(1, "toolu_b", "read"),
      json(1, '{"path":"b"}'),
      stop(1),
      messageDelta("tool_use"),
      { type: "message_stop" },
    ]);
    const p = await provider([{ body }]);
    const { events } = await collect(p);
    expect(calls(events).map((c) => [c.id, c.name, c.arguments])).toEqual([
      ["toolu_a", "read", '{"path":"a"}'],
      ["toolu_b", "read", '{"path":"b"}'],
    ]);
    // input_tokens counts cached input too (Anthropic reports them apart), as OpenAI does.
    expect(events).toContainEqual({
      type: "usage",
      usage: { input_tokens: 25, output_tokens: 30, cached_tokens: 5, cache_write_tokens: 0 },
    });
    expect(lastEnd(events)?.reason).toBe("tool_calls");
  });

  it("a tool_use with no input deltas still yields {} arguments", async () => {
    const body = framed([
      start,
      toolStart(0, "toolu_a", "list"),
      stop(0),
      messageDelta("tool_use"),
      { type: "message_stop" },
    ]);
    const p = await provider([{ body }]);
    const { events } = await collect(p);
    expect(calls(events)).toEqual([{ id: "toolu_a", name: "list", arguments: "{}", fragments: 2 }]);
    expect(lastEnd(events)?.reason).toBe("tool_calls");
  });

  it("max_tokens in the middle of tool arguments: fragments arrive but the end is length", async () => {
    const body = framed([
      start,
      toolStart(0, "toolu_a", "write"),
      json(0, '{"path":"x","content":"abc'),
      stop(0),
      messageDelta("max_tokens"),
      { type: "message_stop" },
    ]);
    const p = await provider([{ body }]);
    const { events } = await collect(p);
    expect(calls(events)[0]?.arguments).toBe('{"path":"x","content":"abc');
    expect(endsNormally(events)).toBe(false);
    expect(lastEnd(events)?.reason).toBe("length");
  });

  it("a clean EOF without message_stop throws TRANSPORT and yields no end", async () => {
    const body = framed([
      start,
      toolStart(0, "toolu_a", "read"),
      json(0, '{"path":"a"}'),
      stop(0),
      messageDelta("tool_use"),
    ]);
    const p = await provider([{ body }]);
    const { events, error } = await collect(p);
    expect(error).toMatchObject({ code: "TRANSPORT", retryable: true });
    expect(lastEnd(events)).toBeUndefined();
  });

  it("an error event after output throws with its code and no end", async () => {
    const body = framed([
      start,
      toolStart(0, "toolu_a", "read"),
      json(0, '{"pa'),
      { type: "error", error: { type: "api_error", message: "Internal server error" } },
    ]);
    const p = await provider([{ body, headers: { ...SSE_HEADERS, "request-id": "req_mid" } }]);
    const { events, error } = await collect(p);
    expect(error).toMatchObject({ code: "SERVER", retryable: true, requestId: "req_mid" });
    expect(lastEnd(events)).toBeUndefined();
  });

  it("refusal and pause_turn never end normally", async () => {
    for (const reason of ["refusal", "pause_turn"]) {
      const body = framed([
        start,
        { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
        stop(0),
        messageDelta(reason),
        { type: "message_stop" },
      ]);
      const p = await provider([{ body }]);
      const { events } = await collect(p);
      expect(endsNormally(events), reason).toBe(false);
    }
  });

  it("a connection cut mid-arguments is TRANSPORT", async () => {
    const full = fixture("anthropic/text-then-tool-use.sse").toString("utf8");
    const p = await provider([{ cutAfter: full.slice(0, full.indexOf("San Franci") + 40) }]);
    const { events, error } = await collect(p);
    expect(calls(events)[0]?.name).toBe("get_current_temperature");
    expect(error).toMatchObject({ code: "TRANSPORT", retryable: true });
    expect(lastEnd(events)).toBeUndefined();
  });
});

describe("anthropic: HTTP errors", () => {
  it("529 with a request id is OVERLOADED", async () => {
    const p = await provider([
      {
        status: 529,
        headers: { ...JSON_HEADERS, "request-id": "req_01RCc7MbLyQNtGKzBTv8VCep", "x-should-retry": "true" },
        body: fixture("errors/anthropic-529-overloaded.body"),
      },
    ]);
    expect((await collect(p)).error).toMatchObject({
      code: "OVERLOADED",
      status: 529,
      retryable: true,
      requestId: "req_01RCc7MbLyQNtGKzBTv8VCep",
    });
  });

  it("529 with the request id only in the body", async () => {
    const p = await provider([
      {
        status: 529,
        headers: JSON_HEADERS,
        body: fixture("errors/anthropic-529-overloaded-with-request-id.body"),
      },
    ]);
    expect((await collect(p)).error).toMatchObject({
      code: "OVERLOADED",
      requestId: "req_011CZAY8xEUqbHSEE3BdFtMh",
    });
  });

  it("429 with retry-after is RATE_LIMIT even though the message says to reduce the prompt", async () => {
    const p = await provider([
      {
        status: 429,
        headers: { ...JSON_HEADERS, "retry-after": "12" },
        body: fixture("errors/anthropic-429-rate-limit.body"),
      },
    ]);
    expect((await collect(p)).error).toMatchObject({
      code: "RATE_LIMIT",
      retryAfterMs: 12_000,
      providerCode: "rate_limit_error",
    });
  });

  it("401 is AUTH; the key was sent as x-api-key and appears in no error surface", async () => {
    const p = await provider(
      [
        {
          status: 401,
          headers: JSON_HEADERS,
          body: fixture("errors/anthropic-401-authentication-error.body"),
        },
      ],
      { apiKey: CANARY },
    );
    const { error } = await collect(p);
    expect(error).toMatchObject({ code: "AUTH", status: 401, providerCode: "authentication_error" });
    expect(servers.current.received[0]?.headers["x-api-key"]).toBe(CANARY);
    for (const surface of [error?.message, JSON.stringify(error), String(error), JSON.stringify(p.identity)])
      expect(surface).not.toContain(CANARY);
  });

  it("'prompt is too long' 400 is CONTEXT_WINDOW_EXCEEDED; other 400s are INVALID_REQUEST", async () => {
    const tooLong = JSON.stringify({
      type: "error",
      error: { type: "invalid_request_error", message: "prompt is too long: 215000 tokens > 200000 maximum" },
    });
    const p = await provider([
      { status: 400, headers: JSON_HEADERS, body: tooLong },
      { status: 400, headers: JSON_HEADERS, body: fixture("errors/anthropic-400-invalid-request.body") },
    ]);
    expect((await collect(p)).error).toMatchObject({ code: "CONTEXT_WINDOW_EXCEEDED", retryable: false });
    expect((await collect(p)).error).toMatchObject({
      code: "INVALID_REQUEST",
      requestId: "req_011Ca7jT9AHpgXgdv8igm4z9",
      retryable: false,
    });
  });
});

describe("anthropic: what is sent", () => {
  it("echoes the thinking signature back, pairs tool results in order, tools as JSON Schema, no key for loopback", async () => {
    const p = await provider(
      [{ body: fixture("anthropic/thinking-signature.sse") }, { body: fixture("anthropic/text.sse") }],
      { thinkingBudgetTokens: 1024 },
    );
    const first = await collect(p);
    const reasoning = reasoningOf(first.events);
    expect(reasoning.signature).toBeDefined();

    const messages: ModelMessage[] = [
      { role: "system", content: "sys" },
      { role: "user", content: "read a and b" },
      {
        role: "assistant",
        content: "Reading.",
        reasoning: [reasoning, { text: "unsigned text from elsewhere" }],
        calls: [
          { id: "toolu_1", name: "read", arguments: { path: "a" } },
          { id: "toolu_2", name: "read", arguments: { path: "b" } },
        ],
      },
      { role: "tool", call_id: "toolu_1", name: "read", status: "ok", content: "A" },
      { role: "tool", call_id: "toolu_2", name: "read", status: "denied", content: "denied by policy" },
    ];
    await collect(p, request({ messages, tools: READ_TOOLS }));
    const sent = servers.current.received[1];
    expect(sent?.path).toBe("/v1/messages");
    expect(sent?.headers["x-api-key"]).toBeUndefined();
    const body = JSON.parse(sent?.body ?? "{}");
    expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
    // Cache breakpoints: the system block, and the last block of the last message (rolling).
    const ephemeral = { type: "ephemeral" };
    expect(body.system).toEqual([{ type: "text", text: "sys", cache_control: ephemeral }]);
    expect(body.messages).toEqual([
      // The end of the previous request (before the latest reply) is a breakpoint too.
      { role: "user", content: [{ type: "text", text: "read a and b", cache_control: ephemeral }] },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: reasoning.text, signature: reasoning.signature },
          { type: "text", text: "Reading." },
          { type: "tool_use", id: "toolu_1", name: "read", input: { path: "a" } },
          { type: "tool_use", id: "toolu_2", name: "read", input: { path: "b" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "A" },
          {
            type: "tool_result",
            tool_use_id: "toolu_2",
            content: "denied by policy",
            is_error: true,
            cache_control: ephemeral,
          },
        ],
      },
    ]);
    expect(body.tools).toEqual([
      expect.objectContaining({ name: "read", description: "Read a file.", input_schema: READ_SCHEMA }),
    ]);
  });
});
