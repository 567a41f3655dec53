import { describe, expect, it } from "vitest";
import type { ModelMessage, ToolSpec } from "../../src/protocol/types.js";
import { createOpenAICompatibleProvider } from "../../src/providers/openai-compatible.js";
import { calls, collect, endsNormally, lastEnd, request, text } from "./helpers/collect.js";
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
  return createOpenAICompatibleProvider({
    model: "test-model",
    baseUrl: `${origin}/v1`,
    ...(apiKey === undefined ? {} : { apiKey }),
  });
}

function chunk(
  delta: Record<string, unknown>,
  finish: string | null = null,
  extra: Record<string, unknown> = {},
) {
  return {
    id: "c1",
    object: "chat.completion.chunk",
    created: 1,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  };
}

describe("openai-compatible: recorded streams", () => {
  it("streams text and usage from a separate usage chunk, ending stop", async () => {
    const p = await provider([{ body: fixture("openai-chat/text-usage.sse") }]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    expect(text(events)).toBe("The capital of Mexico is Mexico City.");
    expect(events.filter((e) => e.type === "usage")).toEqual([
      {
        type: "usage",
        usage: expect.objectContaining({
          input_tokens: expect.any(Number),
          output_tokens: expect.any(Number),
        }),
      },
    ]);
    expect(events.at(-1)).toEqual({ type: "end", reason: "stop" });
  });

  it("reassembles arguments split over many chunks; id and name only on the first fragment", async () => {
    const p = await provider([{ body: fixture("openai-chat/tool-call-args-split.sse") }]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    const [call, ...rest] = calls(events);
    expect(rest).toEqual([]);
    expect(call?.id).toBe("call_4kc6691zCzjPnOuEtbEGUvz2");
    expect(call?.name).toBe("final_result");
    expect(call?.fragments).toBeGreaterThan(30);
    expect(JSON.parse(call?.arguments ?? "")).toHaveProperty("answers");
    const named = events.filter((e) => e.type === "tool_call_delta" && e.name !== undefined);
    expect(named).toHaveLength(1);
    expect(
      events.some((e) => e.type === "tool_call_delta" && e.name === undefined && e.arguments === ""),
    ).toBe(false);
    expect(events.at(-1)).toEqual({ type: "end", reason: "tool_calls" });
  });

  it("keeps parallel calls apart by index", async () => {
    const p = await provider([{ body: fixture("openai-chat/parallel-tool-calls.sse") }]);
    const { events } = await collect(p);
    expect(calls(events).map(({ id, name, arguments: a }) => ({ id, name, a }))).toEqual([
      { id: "call_3rqTYrA6H21AYUaRGP4F66oq", name: "get_country", a: "{}" },
      { id: "call_Xw9XMKBJU48kAAd78WgIswDx", name: "get_product_name", a: "{}" },
    ]);
    expect(events.at(-2)).toEqual({
      type: "usage",
      usage: { input_tokens: 364, output_tokens: 40, reasoning_tokens: 0, cached_tokens: 0 },
    });
    expect(lastEnd(events)?.reason).toBe("tool_calls");
  });

  it("finish_reason length never ends normally, and reasoning usage is reported", async () => {
    const p = await provider([{ body: fixture("openai-chat/finish-length-usage.sse") }]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    expect(endsNormally(events)).toBe(false);
    expect(lastEnd(events)?.reason).toBe("length");
    expect(events).toContainEqual({
      type: "usage",
      usage: { input_tokens: 12, output_tokens: 100, reasoning_tokens: 100, cached_tokens: 0 },
    });
  });
});

describe("openai-compatible: scripted streams", () => {
  it("interleaved calls, empty fragments, SSE comments, reasoning_content and usage on the finish chunk", async () => {
    const body = sse([
      ": OPENROUTER PROCESSING",
      { data: chunk({ role: "assistant", reasoning_content: "think " }) },
      { data: chunk({ reasoning: "more" }) },
      { data: chunk({ content: "ok" }) },
      {
        data: chunk({
          tool_calls: [{ index: 0, id: "a", type: "function", function: { name: "read", arguments: "" } }],
        }),
      },
      {
        data: chunk({
          tool_calls: [{ index: 1, id: "b", type: "function", function: { name: "glob", arguments: "" } }],
        }),
      },
      ": keep-alive",
      { data: chunk({ tool_calls: [{ index: 0, function: { arguments: '{"pa' } }] }) },
      { data: chunk({ tool_calls: [{ index: 1, function: { arguments: "" } }] }) },
      { data: chunk({ tool_calls: [{ index: 1, function: { arguments: '{"pattern":"*"}' } }] }) },
      { data: chunk({ tool_calls: [{ index: 0, function: { arguments: 'th":"a.txt"}' } }] }) },
      {
        data: chunk({}, "tool_calls", {
          usage: { prompt_tokens: 5, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 2 } },
        }),
      },
      "data: [DONE]",
    ]);
    const p = await provider([{ body }]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    expect(text(events)).toBe("ok");
    expect(events.filter((e) => e.type === "reasoning_delta")).toEqual([
      { type: "reasoning_delta", text: "think " },
      { type: "reasoning_delta", text: "more" },
    ]);
    expect(calls(events).map(({ id, name, arguments: a }) => ({ id, name, a }))).toEqual([
      { id: "a", name: "read", a: '{"path":"a.txt"}' },
      { id: "b", name: "glob", a: '{"pattern":"*"}' },
    ]);
    expect(events).toContainEqual({
      type: "usage",
      // No completion_tokens_details: the reasoning count is unknown, so it is left out.
      usage: { input_tokens: 5, output_tokens: 7, cached_tokens: 2 },
    });
    expect(lastEnd(events)).toEqual({ type: "end", reason: "tool_calls" });
  });

  it("a stream that stops without finish_reason throws TRANSPORT and has no end", async () => {
    const body = sse([
      {
        data: chunk({
          tool_calls: [
            { index: 0, id: "a", type: "function", function: { name: "read", arguments: '{"pa' } },
          ],
        }),
      },
    ]);
    const p = await provider([{ body }]);
    const { events, error } = await collect(p);
    expect(error?.code).toBe("TRANSPORT");
    expect(error?.retryable).toBe(true);
    expect(lastEnd(events)).toBeUndefined();
  });

  it("an error object inside a 200 stream becomes a classified ProviderError", async () => {
    const body = sse([
      { data: chunk({ content: "partial" }) },
      {
        data: {
          error: {
            message: "Rate limit exceeded upstream",
            type: "rate_limit_error",
            code: "rate_limit_exceeded",
          },
        },
      },
    ]);
    const p = await provider([{ body, headers: { ...SSE_HEADERS, "x-request-id": "req_stream_1" } }]);
    const { events, error } = await collect(p);
    expect(error?.code).toBe("RATE_LIMIT");
    expect(error?.requestId).toBe("req_stream_1");
    expect(error?.status).toBeUndefined();
    expect(endsNormally(events)).toBe(false);
  });

  it("a connection cut mid-arguments throws retryable TRANSPORT with no end", async () => {
    const full = fixture("openai-chat/tool-call-args-split.sse").toString("utf8");
    const cut = full.slice(0, full.indexOf("Capital") + 20);
    const p = await provider([{ cutAfter: cut }]);
    const { events, error } = await collect(p);
    expect(calls(events)[0]?.name).toBe("final_result");
    expect(error?.code).toBe("TRANSPORT");
    expect(error?.retryable).toBe(true);
    expect(lastEnd(events)).toBeUndefined();
  });
});

describe("openai-compatible: HTTP errors", () => {
  it("429 with Retry-After is RATE_LIMIT with retryAfterMs and the request id", async () => {
    const p = await provider([
      {
        status: 429,
        headers: { ...JSON_HEADERS, "retry-after": "7", "x-request-id": "df4093761753468e57c467fd3774f9ad" },
        body: fixture("errors/openai-429-rate-limit-tokens.body"),
      },
    ]);
    const { error } = await collect(p);
    expect(error).toMatchObject({
      code: "RATE_LIMIT",
      retryable: true,
      status: 429,
      providerCode: "rate_limit_exceeded",
      requestId: "df4093761753468e57c467fd3774f9ad",
      retryAfterMs: 7000,
    });
  });

  it("401 is AUTH and the key appears nowhere: message, JSON, identity, or what was recorded", async () => {
    const echoed = JSON.stringify({
      error: {
        message: `Incorrect API key provided: ${CANARY}.`,
        type: "invalid_request_error",
        code: "invalid_api_key",
      },
    });
    const p = await provider([{ status: 401, headers: JSON_HEADERS, body: echoed }], CANARY);
    const { error } = await collect(p);
    expect(error?.code).toBe("AUTH");
    expect(error?.retryable).toBe(false);
    expect(servers.current.received[0]?.headers.authorization).toBe(`Bearer ${CANARY}`);
    for (const surface of [
      error?.message,
      JSON.stringify(error),
      String(error),
      error?.stack,
      JSON.stringify(p.identity),
    ]) {
      expect(surface ?? "").not.toContain(CANARY);
      expect(surface ?? "").not.toContain("DO-NOT-LEAK");
    }
    expect(p.identity).toEqual({
      kind: "openai-compatible",
      model: "test-model",
      base_url: `${servers.current.origin}/v1`,
    });
  });

  it("the recorded 401 body is AUTH", async () => {
    const p = await provider([
      { status: 401, headers: JSON_HEADERS, body: fixture("errors/openai-401-invalid-api-key.body") },
    ]);
    const { error } = await collect(p);
    expect(error).toMatchObject({ code: "AUTH", providerCode: "invalid_api_key", status: 401 });
    expect(error?.message).not.toContain("1sk-F18b");
  });

  it("context_length_exceeded is CONTEXT_WINDOW_EXCEEDED and not retryable", async () => {
    const p = await provider([
      { status: 400, headers: JSON_HEADERS, body: fixture("errors/openai-400-context-length-exceeded.body") },
    ]);
    const { error } = await collect(p);
    expect(error).toMatchObject({ code: "CONTEXT_WINDOW_EXCEEDED", retryable: false, status: 400 });
  });

  it("model_not_found is NOT_FOUND; 529 is OVERLOADED", async () => {
    const p = await provider([
      {
        status: 404,
        headers: { ...JSON_HEADERS, "x-request-id": "req_ae3c" },
        body: fixture("errors/openai-404-model-not-found.body"),
      },
      { status: 529, headers: JSON_HEADERS, body: fixture("errors/anthropic-529-overloaded.body") },
    ]);
    expect((await collect(p)).error).toMatchObject({ code: "NOT_FOUND", requestId: "req_ae3c" });
    expect((await collect(p)).error).toMatchObject({ code: "OVERLOADED", retryable: true, status: 529 });
  });

  it("insufficient_quota on 429 is QUOTA, not retryable", async () => {
    const body = JSON.stringify({
      error: {
        message: "You exceeded your current quota",
        type: "insufficient_quota",
        code: "insufficient_quota",
      },
    });
    const p = await provider([{ status: 429, headers: JSON_HEADERS, body }]);
    expect((await collect(p)).error).toMatchObject({ code: "QUOTA", retryable: false });
  });
});

describe("openai-compatible: what is sent", () => {
  it("sends messages in order with paired tool results, tools as JSON Schema, no key for loopback", async () => {
    const schema = {
      type: "object",
      properties: { path: { type: "string" } },
      required: ["path"],
      additionalProperties: false,
    };
    const tools: ToolSpec[] = [{ name: "read", description: "Read a file.", input_schema: schema }];
    const messages: ModelMessage[] = [
      { role: "system", content: "be brief" },
      { role: "user", content: "read a and b" },
      {
        role: "assistant",
        content: "",
        reasoning: [{ text: "I should read both" }],
        calls: [
          { id: "c1", name: "read", arguments: { path: "a" } },
          { id: "c2", name: "read", arguments: { path: "b" } },
        ],
      },
      { role: "tool", call_id: "c1", name: "read", status: "ok", content: "A" },
      { role: "tool", call_id: "c2", name: "read", status: "error", content: "NOT_FOUND: b" },
    ];
    const p = await provider([{ body: fixture("openai-chat/text-usage.sse") }]);
    await collect(p, request({ messages, tools }));
    const sent = servers.current.received[0];
    expect(sent?.path).toBe("/v1/chat/completions");
    expect(sent?.headers.authorization).toBeUndefined();
    const body = JSON.parse(sent?.body ?? "{}");
    expect(body).toMatchObject({
      model: "test-model",
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(body.messages).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: "read a and b" },
      {
        role: "assistant",
        content: null,
        reasoning_content: "I should read both",
        tool_calls: [
          { id: "c1", type: "function", function: { name: "read", arguments: '{"path":"a"}' } },
          { id: "c2", type: "function", function: { name: "read", arguments: '{"path":"b"}' } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "A" },
      { role: "tool", tool_call_id: "c2", content: "NOT_FOUND: b" },
    ]);
    expect(body.tools).toEqual([
      { type: "function", function: { name: "read", description: "Read a file.", parameters: schema } },
    ]);
  });
});

describe("openai-compatible: truncation, cancellation and timeout", () => {
  it("a tool call cut by finish_reason length is streamed but never ends normally", async () => {
    const body = sse([
      {
        data: chunk({
          tool_calls: [
            {
              index: 0,
              id: "a",
              type: "function",
              function: { name: "write", arguments: '{"path":"x","content":"hel' },
            },
          ],
        }),
      },
      { data: chunk({}, "length") },
      "data: [DONE]",
    ]);
    const p = await provider([{ body }]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    expect(calls(events)[0]?.arguments).toBe('{"path":"x","content":"hel');
    expect(endsNormally(events)).toBe(false);
    expect(lastEnd(events)?.reason).toBe("length");
  });

  it("finish_reason stop with complete calls (Ollama style) ends tool_calls; tool_calls without calls ends error", async () => {
    const withCalls = sse([
      {
        data: chunk({
          tool_calls: [
            { index: 0, id: "a", type: "function", function: { name: "read", arguments: '{"path":"a"}' } },
          ],
        }),
      },
      { data: chunk({}, "stop") },
      "data: [DONE]",
    ]);
    const p = await provider([
      { body: withCalls },
      { body: sse([{ data: chunk({}, "tool_calls") }, "data: [DONE]"]) },
    ]);
    expect(lastEnd((await collect(p)).events)).toEqual({ type: "end", reason: "tool_calls" });
    const { events } = await collect(p);
    expect(endsNormally(events)).toBe(false);
    expect(lastEnd(events)?.reason).toBe("error");
  });

  it("a finish reason outside the allow-list ends with error", async () => {
    const p = await provider([
      { body: sse([{ data: chunk({ content: "hi" }) }, { data: chunk({}, "eos_token") }, "data: [DONE]"]) },
    ]);
    const { events } = await collect(p);
    expect(endsNormally(events)).toBe(false);
    expect(lastEnd(events)?.reason).toBe("error");
  });

  it("the caller's abort is CANCELLED (not retryable); an idle server is TIMEOUT (retryable)", async () => {
    const p = await provider([{ holdAfter: sse([{ data: chunk({ content: "partial" }) }]) }]);
    const controller = new AbortController();
    const iterator = p.stream(request(), controller.signal)[Symbol.asyncIterator]();
    expect(await iterator.next()).toMatchObject({ value: { type: "text_delta", text: "partial" } });
    controller.abort();
    await expect(iterator.next()).rejects.toMatchObject({ code: "CANCELLED", retryable: false });

    const slow = createOpenAICompatibleProvider({
      model: "m",
      baseUrl: `${servers.current.origin}/v1`,
      timeoutMs: 150,
    });
    const { events, error } = await collect(slow);
    expect(text(events)).toBe("partial");
    expect(error).toMatchObject({ code: "TIMEOUT", retryable: true });
    expect(lastEnd(events)).toBeUndefined();
  });
});
