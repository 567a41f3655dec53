import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import type { ModelMessage, StreamEvent } from "../../src/protocol/types.js";
import { createOpenAICompatibleProvider } from "../../src/providers/openai-compatible.js";
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
    await collect(p, request({ messages, tools: READ_TOOLS }));
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
      { type: "function", function: { name: "read", description: "Read a file.", parameters: READ_SCHEMA } },
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

describe("openai-compatible: wire edge cases", () => {
  function toolDeltas(events: readonly StreamEvent[]) {
    return events.filter((e) => e.type === "tool_call_delta");
  }

  it("fragments without index are kept apart by id; a fragment with neither index nor id extends the last call", async () => {
    const body = sse([
      {
        data: chunk({
          tool_calls: [{ id: "a", type: "function", function: { name: "read", arguments: '{"path":"a"}' } }],
        }),
      },
      {
        data: chunk({
          tool_calls: [{ id: "b", type: "function", function: { name: "glob", arguments: '{"pat' } }],
        }),
      },
      { data: chunk({ tool_calls: [{ function: { arguments: 'tern":"*"}' } }] }) },
      { data: chunk({}, "tool_calls") },
      "data: [DONE]",
    ]);
    const p = await provider([{ body }]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    expect(toolDeltas(events)).toEqual([
      { type: "tool_call_delta", call_id: "a", name: "read", arguments: '{"path":"a"}' },
      { type: "tool_call_delta", call_id: "b", name: "glob", arguments: '{"pat' },
      { type: "tool_call_delta", call_id: "b", arguments: 'tern":"*"}' },
    ]);
    expect(calls(events).map(({ id, name, arguments: a }) => ({ id, name, a }))).toEqual([
      { id: "a", name: "read", a: '{"path":"a"}' },
      { id: "b", name: "glob", a: '{"pattern":"*"}' },
    ]);
    expect(lastEnd(events)).toEqual({ type: "end", reason: "tool_calls" });
  });

  it("without index, a new id never lands on a slot an indexed call holds, and an id-less fragment continues the call named last", async () => {
    const body = sse([
      {
        data: chunk({
          tool_calls: [
            { index: 1, id: "a", type: "function", function: { name: "read", arguments: '{"pa' } },
          ],
        }),
      },
      {
        data: chunk({
          tool_calls: [
            { id: "b", type: "function", function: { name: "glob", arguments: '{"pattern":"*"}' } },
          ],
        }),
      },
      { data: chunk({ tool_calls: [{ id: "a", function: { arguments: 'th":' } }] }) },
      { data: chunk({ tool_calls: [{ function: { arguments: '"a"}' } }] }) },
      { data: chunk({}, "tool_calls") },
      "data: [DONE]",
    ]);
    const p = await provider([{ body }]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    expect(calls(events).map(({ id, name, arguments: a }) => ({ id, name, a }))).toEqual([
      { id: "a", name: "read", a: '{"path":"a"}' },
      { id: "b", name: "glob", a: '{"pattern":"*"}' },
    ]);
    expect(lastEnd(events)).toEqual({ type: "end", reason: "tool_calls" });
  });

  it("a known index reused with a different id is SERVER invalid_response and never ends", async () => {
    const body = sse([
      {
        data: chunk({
          tool_calls: [{ index: 0, id: "a", type: "function", function: { name: "read", arguments: "{}" } }],
        }),
      },
      {
        data: chunk({
          tool_calls: [{ index: 0, id: "b", type: "function", function: { name: "glob", arguments: "{}" } }],
        }),
      },
      { data: chunk({}, "tool_calls") },
      "data: [DONE]",
    ]);
    const p = await provider([{ body }]);
    const { events, error } = await collect(p);
    expect(error).toMatchObject({ code: "SERVER", providerCode: "invalid_response", retryable: true });
    expect(toolDeltas(events)).toEqual([
      { type: "tool_call_delta", call_id: "a", name: "read", arguments: "{}" },
    ]);
    expect(lastEnd(events)).toBeUndefined();
  });

  it("a first fragment without an id, without a name, or with nothing to extend is SERVER and never ends", async () => {
    const starts = [
      { index: 0, type: "function", function: { name: "read", arguments: "{}" } },
      { index: 0, id: "a", type: "function", function: { arguments: "{}" } },
      { index: 0, id: "a", type: "function", function: { name: "", arguments: "{}" } },
      { function: { arguments: "{}" } },
    ];
    const p = await provider(
      starts.map((start) => ({
        body: sse([
          { data: chunk({ content: "ok" }) },
          { data: chunk({ tool_calls: [start] }) },
          { data: chunk({}, "tool_calls") },
          "data: [DONE]",
        ]),
      })),
    );
    for (const start of starts) {
      const { events, error } = await collect(p);
      expect(error, JSON.stringify(start)).toMatchObject({
        code: "SERVER",
        providerCode: "invalid_response",
      });
      expect(text(events)).toBe("ok");
      expect(toolDeltas(events)).toEqual([]);
      expect(lastEnd(events)).toBeUndefined();
    }
    expect(servers.current.received).toHaveLength(starts.length);
  });

  it("a 200 JSON error body is classified without a status; a 200 JSON body without error is SERVER invalid_response", async () => {
    const rateLimited = JSON.stringify({
      error: { message: "Rate limit reached for requests", type: "requests", code: "rate_limit_exceeded" },
    });
    const completion = JSON.stringify({
      id: "chatcmpl-1",
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
    });
    const p = await provider([
      { headers: { ...JSON_HEADERS, "x-request-id": "req_json_200" }, body: rateLimited },
      { headers: { "content-type": "application/json; charset=utf-8" }, body: completion },
    ]);
    const first = await collect(p);
    expect(first.events).toEqual([]);
    expect(first.error).toMatchObject({
      code: "RATE_LIMIT",
      retryable: true,
      providerCode: "rate_limit_exceeded",
      requestId: "req_json_200",
    });
    expect(first.error?.status).toBeUndefined();
    expect(first.error?.message).toContain("Rate limit reached for requests");

    const second = await collect(p);
    expect(second.events).toEqual([]);
    // A server that ignores `stream: true` would answer the same way again: not retried.
    expect(second.error).toMatchObject({
      code: "SERVER",
      providerCode: "invalid_response",
      status: 200,
      retryable: false,
    });
    expect(second.error?.message).not.toContain("hi");
  });

  it("a 200 event stream with an empty body (or only comments) is EMPTY_RESPONSE, retryable, with no events", async () => {
    const p = await provider([{ body: "" }, { body: ": keep-alive\n\n: keep-alive\n\n" }]);
    for (let i = 0; i < 2; i += 1) {
      const { events, error } = await collect(p);
      expect(events).toEqual([]);
      expect(error).toMatchObject({ code: "EMPTY_RESPONSE", retryable: true });
    }
  });

  it("[DONE] without any finish_reason ends with error, not normally, and does not throw", async () => {
    const p = await provider([
      { body: sse(["data: [DONE]"]) },
      { body: sse([{ data: chunk({ content: "half" }) }, "data: [DONE]"]) },
    ]);
    const bare = await collect(p);
    expect(bare.error).toBeUndefined();
    expect(bare.events).toEqual([{ type: "end", reason: "error", message: expect.any(String) }]);

    const withText = await collect(p);
    expect(withText.error).toBeUndefined();
    expect(text(withText.events)).toBe("half");
    expect(endsNormally(withText.events)).toBe(false);
    expect(lastEnd(withText.events)?.reason).toBe("error");
  });

  it("a chunk that is not JSON, or not shaped like a chunk, is SERVER invalid_response with no end", async () => {
    const p = await provider([
      { body: sse([{ data: chunk({ content: "ok" }) }, "data: {oops", { data: chunk({}, "stop") }]) },
      {
        body: sse([
          { data: chunk({ content: "ok" }) },
          { data: { id: "c1", choices: "nope" } },
          { data: chunk({}, "stop") },
        ]),
      },
      {
        body: sse([
          { data: chunk({ content: "ok" }) },
          { data: chunk({ tool_calls: [{ index: -1, id: "a", function: { name: "read" } }] }) },
          { data: chunk({}, "stop") },
        ]),
      },
    ]);
    for (let i = 0; i < 3; i += 1) {
      const { events, error } = await collect(p);
      expect(error).toMatchObject({ code: "SERVER", providerCode: "invalid_response" });
      expect(error?.message).toContain("malformed response");
      expect(text(events)).toBe("ok");
      expect(lastEnd(events)).toBeUndefined();
    }
  });

  it("a 502 with an HTML body is SERVER with status 502, retryable, and the HTML is not in the message", async () => {
    const p = await provider([
      {
        status: 502,
        headers: { "content-type": "text/html" },
        body: "<html><body><h1>502 Bad Gateway</h1></body></html>",
      },
    ]);
    const { events, error } = await collect(p);
    expect(events).toEqual([]);
    expect(error).toMatchObject({ code: "SERVER", status: 502, retryable: true });
    expect(error?.providerCode).toBeUndefined();
    expect(error?.message).not.toContain("<html>");
  });

  it("finish_reason content_filter ends with content_filter, not normally", async () => {
    const p = await provider([
      {
        body: sse([
          { data: chunk({ content: "partial" }) },
          { data: chunk({}, "content_filter") },
          "data: [DONE]",
        ]),
      },
    ]);
    const { events, error } = await collect(p);
    expect(error).toBeUndefined();
    expect(text(events)).toBe("partial");
    expect(endsNormally(events)).toBe(false);
    expect(lastEnd(events)).toEqual({ type: "end", reason: "content_filter", message: expect.any(String) });
  });

  it("sends maxOutputTokens as max_tokens and keeps the base URL's query string, which the identity drops", async () => {
    const { origin } = await servers.start([{ body: fixture("openai-chat/text-usage.sse") }]);
    const p = createOpenAICompatibleProvider({
      model: "m",
      baseUrl: `${origin}/v1?api-version=2024`,
      maxOutputTokens: 256,
    });
    const { error } = await collect(p);
    expect(error).toBeUndefined();
    const sent = servers.current.received[0];
    // The helper records req.url, which includes the query string.
    expect(sent?.method).toBe("POST");
    expect(sent?.path).toBe("/v1/chat/completions?api-version=2024");
    const body = JSON.parse(sent?.body ?? "{}");
    expect(body.max_tokens).toBe(256);
    expect(body).not.toHaveProperty("max_completion_tokens");
    expect(body).not.toHaveProperty("tools");
    expect(sent?.headers["content-length"]).toBe(String(Buffer.byteLength(sent?.body ?? "")));
    expect(p.identity.base_url).toBe(`${origin}/v1`);

    const slash = createOpenAICompatibleProvider({ model: "m", baseUrl: `${origin}/v1/` });
    await collect(slash);
    expect(servers.current.received[1]?.path).toBe("/v1/chat/completions");
    expect(JSON.parse(servers.current.received[1]?.body ?? "{}")).not.toHaveProperty("max_tokens");
  });

  it("multi-byte UTF-8 split across TCP writes mid-character arrives intact", async () => {
    const contents = ["h", "éllo ", "世", "界 ", "🎉"];
    const bytes = Buffer.from(
      sse([
        ...contents.map((content) => ({ data: chunk({ content }) })),
        { data: chunk({}, "stop") },
        "data: [DONE]",
      ]),
      "utf8",
    );
    // Cut inside é (after byte 1 of 2), 世 (1 of 3), 界 (2 of 3) and 🎉 (3 of 4): each piece completes
    // one event and ends in the middle of a character of the next.
    const cutInside = (char: string, after: number) => bytes.indexOf(Buffer.from(char, "utf8")) + after;
    const cuts = [cutInside("é", 1), cutInside("世", 1), cutInside("界", 2), cutInside("🎉", 3)];
    const pieces = [0, ...cuts].map((from, k) => bytes.subarray(from, cuts[k] ?? bytes.length));
    expect(Buffer.concat(pieces).equals(bytes)).toBe(true);

    // Lock-step: piece k+1 is written only after the provider yielded the text completed by piece k,
    // so the pieces reach the client as separate reads without relying on timers.
    let deltas = 0;
    let wake: () => void = () => undefined;
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", async () => {
        res.writeHead(200, SSE_HEADERS);
        for (const [k, piece] of pieces.entries()) {
          while (deltas < k) await new Promise<void>((resolve) => (wake = resolve));
          res.write(piece);
        }
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const p = createOpenAICompatibleProvider({ model: "m", baseUrl: `http://127.0.0.1:${port}/v1` });
      const events: StreamEvent[] = [];
      for await (const event of p.stream(request(), new AbortController().signal)) {
        events.push(event as StreamEvent);
        if ((event as StreamEvent).type === "text_delta") {
          deltas += 1;
          wake();
        }
      }
      expect(events.filter((e) => e.type === "text_delta").map((e) => e.text)).toEqual(contents);
      expect(text(events)).toBe("héllo 世界 🎉");
      expect(lastEnd(events)).toEqual({ type: "end", reason: "stop" });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("an assistant message with text and calls is sent with that text; reasoning parts are joined", async () => {
    const messages: ModelMessage[] = [
      { role: "user", content: "read a" },
      {
        role: "assistant",
        content: "Let me look.",
        reasoning: [{ text: "First, " }, { text: "read a. " }, { text: "Then answer." }],
        calls: [{ id: "c1", name: "read", arguments: { path: "a" } }],
      },
      { role: "tool", call_id: "c1", name: "read", status: "ok", content: "A" },
      { role: "assistant", content: "Done.", calls: [] },
    ];
    const p = await provider([{ body: fixture("openai-chat/text-usage.sse") }]);
    await collect(p, request({ messages }));
    const body = JSON.parse(servers.current.received[0]?.body ?? "{}");
    expect(body.messages).toEqual([
      { role: "user", content: "read a" },
      {
        role: "assistant",
        content: "Let me look.",
        reasoning_content: "First, read a. Then answer.",
        tool_calls: [{ id: "c1", type: "function", function: { name: "read", arguments: '{"path":"a"}' } }],
      },
      { role: "tool", tool_call_id: "c1", content: "A" },
      { role: "assistant", content: "Done." },
    ]);
  });
});

describe("openai-compatible: prompt_cache_key", () => {
  const reply = { body: fixture("openai-chat/text-usage.sse") };

  it("is sent as the request's cache key when the endpoint is known to accept it", async () => {
    const { origin } = await servers.start([reply]);
    const p = createOpenAICompatibleProvider({ model: "m", baseUrl: `${origin}/v1`, promptCacheKey: true });
    await collect(p, request({ cacheKey: "harness-abc" }));
    expect(JSON.parse(servers.current.received[0]!.body)).toMatchObject({ prompt_cache_key: "harness-abc" });
  });

  it("is not sent to other compatible servers, which may reject a field they do not know", async () => {
    const p = await provider([reply]);
    await collect(p, request({ cacheKey: "harness-abc" }));
    expect(JSON.parse(servers.current.received[0]!.body)).not.toHaveProperty("prompt_cache_key");
  });
});
