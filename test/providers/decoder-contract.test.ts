import { describe, expect, it } from "vitest";
import { decodeStream, ProtocolError } from "../../src/protocol/decoder.js";
import { createAnthropicProvider } from "../../src/providers/anthropic.js";
import { createHttpJsonProvider } from "../../src/providers/http-json.js";
import { createOpenAICompatibleProvider } from "../../src/providers/openai-compatible.js";
import { createOpenAIResponsesProvider } from "../../src/providers/openai-responses.js";
import type { Provider } from "../../src/providers/provider.js";
import { request } from "./helpers/collect.js";
import { fixture, JSON_HEADERS, serverPerTest } from "./helpers/server.js";

/** The recorded streams through harness's own decoder: only complete replies may come out. */
const servers = serverPerTest();

type Make = (origin: string) => Provider;
const chat: Make = (origin) => createOpenAICompatibleProvider({ model: "m", baseUrl: `${origin}/v1` });
const responses: Make = (origin) => createOpenAIResponsesProvider({ model: "m", baseUrl: `${origin}/v1` });
const anthropic: Make = (origin) => createAnthropicProvider({ model: "m", baseUrl: `${origin}/v1` });

async function decode(make: Make, body: Buffer | string) {
  const { origin } = await servers.start([
    { body, ...(typeof body === "string" ? { headers: JSON_HEADERS } : {}) },
  ]);
  return decodeStream(make(origin).stream(request(), new AbortController().signal));
}

describe("decoder contract", () => {
  it.each([
    ["openai-chat/text-usage.sse", chat, "stop", 0],
    ["openai-chat/tool-call-args-split.sse", chat, "tool_calls", 1],
    ["openai-chat/parallel-tool-calls.sse", chat, "tool_calls", 2],
    ["openai-responses/text.sse", responses, "stop", 0],
    ["openai-responses/function-call.sse", responses, "tool_calls", 1],
    ["openai-responses/reasoning-then-function-call.sse", responses, "tool_calls", 1],
    ["anthropic/text.sse", anthropic, "stop", 0],
    ["anthropic/text-then-tool-use.sse", anthropic, "tool_calls", 1],
    ["anthropic/thinking-signature.sse", anthropic, "stop", 0],
  ] as const)("%s decodes to a %s reply with %i call(s)", async (name, make, stop, count) => {
    const result = await decode(make, fixture(name));
    if (!("reply" in result)) throw result.error;
    expect(result.reply.stop_reason).toBe(stop);
    expect(result.reply.calls).toHaveLength(count);
  });

  it("the thinking signature survives decoding", async () => {
    const result = await decode(anthropic, fixture("anthropic/thinking-signature.sse"));
    if (!("reply" in result)) throw result.error;
    expect(result.reply.reasoning).toHaveLength(1);
    expect(result.reply.reasoning?.[0]?.signature?.startsWith("EvMCCkYICxgCKkCHP2cSuEdcJK")).toBe(true);
  });

  it.each([
    ["openai-chat/finish-length-usage.sse", chat],
    ["openai-responses/incomplete-max-output-tokens.sse", responses],
    ["anthropic/max-tokens.sse", anthropic],
  ] as const)("%s yields no reply", async (name, make) => {
    const result = await decode(make, fixture(name));
    expect("reply" in result).toBe(false);
    if (!("reply" in result)) expect(result.error).toBeInstanceOf(ProtocolError);
  });

  it("http-json actions decode to replies", async () => {
    const make: Make = (origin) => createHttpJsonProvider({ url: `${origin}/p`, model: "rules" });
    const result = await decode(
      make,
      JSON.stringify({ kind: "tool", name: "stock", args: { item_id: "camera" } }),
    );
    if (!("reply" in result)) throw result.error;
    expect(result.reply.calls).toEqual([{ id: "hj-0-0", name: "stock", arguments: { item_id: "camera" } }]);
  });
});
