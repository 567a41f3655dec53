import { describe, expect, it } from "vitest";
import type { ModelMessage } from "../../src/protocol/types.js";
import { createOpenAIResponsesProvider } from "../../src/providers/openai-responses.js";
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

async function provider(replies: ScriptedReply[], apiKey?: string) {
  const { origin } = await servers.start(replies);
  return createOpenAIResponsesProvider({
    model: "gpt-test",
    baseUrl: `${origin}/v1`,
    ...(apiKey === undefined ? {} : { apiKey }),
  });
}

const created = {
  type: "response.created",
  sequence_number: 0,
  response: { id: "resp_1", created_at: 1, model: "gpt-test", status: "in_progress" },
};
const fnAdded = (index: number, id: string, name: string) => ({
  type: "response.output_item.added",
  output_index: index,
  sequence_number: 1,
  item: { type: "function_call", id: `fc_${id}`, call_id: id, name, arguments: "", status: "in_progress" },
});
const argDelta = (index: number, id: string, delta: string) => ({
  type: "response.function_call_arguments.delta",
  item_id: `fc_${id}`,
  output_index: index,
  sequence_number: 2,
  delta,
});
const fnDone = (index: number, id: string, name: string, args: string) => ({
  type: "response.output_item.done",
  output_index: index,
  sequence_number: 3,
  item: { type: "function_call", id: `fc_${id}`, call_id: id, name, arguments: args, status: "completed" },
});
const completed = {
  type: "response.completed",
  sequence_number: 9,
  response: {
    id: "resp_1",
    created_at: 1,
    model: "gpt-test",
    status: "completed",
    incomplete_details: null,
    usage: {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 4 },
      output_tokens: 6,
      output_tokens_details: { reasoning_tokens: 2 },
    },
  },
};
const framed = (events: Record<string, unknown>[]) =>
  sse(events.map((data) => ({ event: String(data.type), data })));

describe("openai responses: recorded streams", () => {
  it("text ends stop with usage", async () => {
    const p = await provider([{ body: fixture("openai-responses/text.sse") }]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    expect(text(events)).toBe("pong");
    expect(events.slice(-2)).toEqual([
      { type: "usage", usage: { input_tokens: 11, output_tokens: 5, reasoning_tokens: 0, cached_tokens: 0 } },
      { type: "end", reason: "stop" },
    ]);
  });

  it("a function call streamed over argument deltas ends tool_calls", async () => {
    const p = await provider([{ body: fixture("openai-responses/function-call.sse") }]);
    const { events } = await collect(p);
    const [call] = calls(events);
    expect(call).toMatchObject({
      id: "call_sVidsfFJ6zlzRpelrPkTPlpd",
      name: "multiply",
      arguments: '{"a":1231,"b":2331}',
    });
    expect(call?.fragments).toBeGreaterThan(5);
    expect(lastEnd(events)?.reason).toBe("tool_calls");
  });

  it("reasoning item then a function call", async () => {
    const p = await provider([{ body: fixture("openai-responses/reasoning-then-function-call.sse") }]);
    const { events } = await collect(p);
    expect(calls(events).map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ["final_result", { result: 6666 }],
    ]);
    expect(events).toContainEqual({
      type: "usage",
      usage: { input_tokens: 53, output_tokens: 469, reasoning_tokens: 448, cached_tokens: 0 },
    });
    expect(lastEnd(events)?.reason).toBe("tool_calls");
  });

  it("response.incomplete (max_output_tokens) never ends normally", async () => {
    const p = await provider([{ body: fixture("openai-responses/incomplete-max-output-tokens.sse") }]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    expect(text(events)).toContain("A cute tabby cat");
    expect(endsNormally(events)).toBe(false);
    expect(lastEnd(events)?.reason).toBe("length");
  });

  it("an error event then response.failed inside a 200 stream is QUOTA (insufficient_quota)", async () => {
    const p = await provider([
      {
        body: fixture("openai-responses/error-then-failed.sse"),
        headers: { ...SSE_HEADERS, "x-request-id": "req_q" },
      },
    ]);
    const { events, error } = await collect(p);
    expect(error).toMatchObject({
      code: "QUOTA",
      retryable: false,
      providerCode: "insufficient_quota",
      requestId: "req_q",
    });
    expect(error?.status).toBeUndefined();
    expect(lastEnd(events)).toBeUndefined();
  });
});

describe("openai responses: scripted streams", () => {
  it("parallel function calls keep their own ids and arguments", async () => {
    const body = framed([
      created,
      fnAdded(0, "call_a", "read"),
      fnAdded(1, "call_b", "read"),
      argDelta(0, "call_a", '{"path":'),
      argDelta(1, "call_b", '{"path":"b"}'),
      argDelta(0, "call_a", '"a"}'),
      fnDone(0, "call_a", "read", '{"path":"a"}'),
      fnDone(1, "call_b", "read", '{"path":"b"}'),
      completed,
    ]);
    const p = await provider([{ body }]);
    const { events } = await collect(p);
    expect(calls(events).map((c) => [c.id, c.arguments])).toEqual([
      ["call_a", '{"path":"a"}'],
      ["call_b", '{"path":"b"}'],
    ]);
    expect(events).toContainEqual({
      type: "usage",
      usage: { input_tokens: 10, output_tokens: 6, reasoning_tokens: 2, cached_tokens: 4 },
    });
    expect(lastEnd(events)).toEqual({ type: "end", reason: "tool_calls" });
  });

  it("a stream without a terminal event throws TRANSPORT even though the SDK finishes", async () => {
    const body = framed([
      created,
      fnAdded(0, "call_a", "read"),
      argDelta(0, "call_a", '{"path":"a"}'),
      fnDone(0, "call_a", "read", '{"path":"a"}'),
    ]);
    const p = await provider([{ body }]);
    const { events, error } = await collect(p);
    expect(error).toMatchObject({ code: "TRANSPORT", retryable: true });
    expect(lastEnd(events)).toBeUndefined();
  });

  it("a mid-stream error event after output is classified (server_error -> SERVER)", async () => {
    const body = framed([
      created,
      fnAdded(0, "call_a", "read"),
      argDelta(0, "call_a", '{"pa'),
      {
        type: "error",
        sequence_number: 3,
        error: {
          type: "server_error",
          code: "server_error",
          message: "The server had an error",
          param: null,
        },
      },
    ]);
    const p = await provider([{ body }]);
    const { events, error } = await collect(p);
    expect(error).toMatchObject({ code: "SERVER", retryable: true });
    expect(endsNormally(events)).toBe(false);
  });

  it("a connection cut mid-arguments is TRANSPORT", async () => {
    const full = fixture("openai-responses/function-call.sse").toString("utf8");
    const cutAt = full.indexOf("response.function_call_arguments.delta");
    const p = await provider([{ cutAfter: full.slice(0, full.indexOf("\n\n", cutAt + 200) + 2) }]);
    const { events, error } = await collect(p);
    expect(calls(events)[0]?.name).toBe("multiply");
    expect(error).toMatchObject({ code: "TRANSPORT", retryable: true });
    expect(lastEnd(events)).toBeUndefined();
  });
});

describe("openai responses: HTTP errors and what is sent", () => {
  it("429 with an HTTP-date Retry-After is RATE_LIMIT with retryAfterMs", async () => {
    const when = new Date(Date.now() + 30_000).toUTCString();
    const p = await provider([
      {
        status: 429,
        headers: { ...JSON_HEADERS, "retry-after": when },
        body: fixture("errors/openai-429-rate-limit-tokens.body"),
      },
    ]);
    const { error } = await collect(p);
    expect(error?.code).toBe("RATE_LIMIT");
    expect(error?.retryAfterMs).toBeGreaterThan(20_000);
    expect(error?.retryAfterMs).toBeLessThanOrEqual(30_000);
  });

  it("401 is AUTH and never reveals the key", async () => {
    const p = await provider(
      [
        {
          status: 401,
          headers: JSON_HEADERS,
          body: JSON.stringify({
            error: {
              message: `Incorrect API key provided: ${CANARY}`,
              type: "invalid_request_error",
              code: "invalid_api_key",
            },
          }),
        },
      ],
      CANARY,
    );
    const { error } = await collect(p);
    expect(error?.code).toBe("AUTH");
    expect(servers.current.received[0]?.headers.authorization).toBe(`Bearer ${CANARY}`);
    for (const surface of [error?.message, JSON.stringify(error), JSON.stringify(p.identity)])
      expect(surface).not.toContain(CANARY);
  });

  it("400 context_length_exceeded is CONTEXT_WINDOW_EXCEEDED", async () => {
    const p = await provider([
      { status: 400, headers: JSON_HEADERS, body: fixture("errors/openai-400-context-length-exceeded.body") },
    ]);
    expect((await collect(p)).error).toMatchObject({
      code: "CONTEXT_WINDOW_EXCEEDED",
      providerCode: "context_length_exceeded",
    });
  });

  it("sends input items in order (calls then paired outputs), tools as JSON Schema, store false, no key for loopback", async () => {
    const messages: ModelMessage[] = [
      { role: "system", content: "sys" },
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: "reading",
        reasoning: [{ text: "hidden" }],
        calls: [{ id: "c1", name: "read", arguments: { path: "a" } }],
      },
      { role: "tool", call_id: "c1", name: "read", status: "ok", content: "A" },
    ];
    const p = await provider([{ body: fixture("openai-responses/text.sse") }]);
    await collect(p, request({ messages, tools: READ_TOOLS }));
    const sent = servers.current.received[0];
    expect(sent?.path).toBe("/v1/responses");
    expect(sent?.headers.authorization).toBeUndefined();
    const body = JSON.parse(sent?.body ?? "{}");
    expect(body).toMatchObject({ model: "gpt-test", stream: true, store: false });
    expect(body.input.map((item: { type?: string; role?: string }) => item.role ?? item.type)).toEqual([
      "system",
      "user",
      "assistant",
      "function_call",
      "function_call_output",
    ]);
    expect(body.input[3]).toMatchObject({
      type: "function_call",
      call_id: "c1",
      name: "read",
      arguments: '{"path":"a"}',
    });
    expect(body.input[4]).toMatchObject({ type: "function_call_output", call_id: "c1", output: "A" });
    expect(JSON.stringify(body.input)).not.toContain("hidden");
    expect(body.tools).toEqual([
      { type: "function", name: "read", description: "Read a file.", parameters: READ_SCHEMA },
    ]);
  });
});
