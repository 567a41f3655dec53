import { describe, expect, it } from "vitest";
import type { ImageRef, ModelMessage } from "../../src/protocol/types.js";
import { createAnthropicProvider } from "../../src/providers/anthropic.js";
import { createProvider } from "../../src/providers/config.js";
import { createOpenAICompatibleProvider } from "../../src/providers/openai-compatible.js";
import { createOpenAIResponsesProvider } from "../../src/providers/openai-responses.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { collect, READ_TOOLS, request } from "./helpers/collect.js";
import { fixture, serverPerTest } from "./helpers/server.js";

/*
 * An image read_file returned (and one attached to the user's input) reaches the wire as an image
 * block on the APIs that take images, with the artifact's bytes base64-encoded; a Chat Completions
 * endpoint gets a line saying the image is not shown. Asserted on the request body the loopback
 * server received.
 */

const servers = serverPerTest();
const PNG = Buffer.from("89504e470d0a1a0a0000000d4948445200000002000000030806000000", "hex");
const BASE64 = PNG.toString("base64");
const image: ImageRef = {
  artifact: sha256Hex(PNG),
  sha256: sha256Hex(PNG),
  media_type: "image/png",
  bytes: PNG.byteLength,
  width: 2,
  height: 3,
};
const messages: ModelMessage[] = [
  { role: "system", content: "sys" },
  { role: "user", content: "look at this", images: [image] },
  { role: "assistant", content: "", calls: [{ id: "c1", name: "read", arguments: { path: "a.png" } }] },
  { role: "tool", call_id: "c1", name: "read", status: "ok", content: "path: a.png", images: [image] },
];
const images = new Map([[image.sha256, new Uint8Array(PNG)]]);

describe("images on the wire", () => {
  it("Anthropic: an image block in the tool result and in the user message", async () => {
    const { origin } = await servers.start([{ body: fixture("anthropic/text.sse") }]);
    const provider = createAnthropicProvider({ model: "claude-test", baseUrl: `${origin}/v1` });
    await collect(provider, request({ messages, tools: READ_TOOLS, images }));
    const body = JSON.parse(servers.current.received[0]?.body ?? "{}");
    const blocks = body.messages.flatMap((m: { content: unknown[] }) => m.content);
    const result = blocks.find((b: { type: string }) => b.type === "tool_result");
    expect(result.content).toEqual([
      { type: "text", text: "path: a.png" },
      { type: "image", source: { type: "base64", media_type: "image/png", data: BASE64 } },
    ]);
    expect(blocks).toContainEqual(
      expect.objectContaining({
        type: "image",
        source: { type: "base64", media_type: "image/png", data: BASE64 },
      }),
    );
  });

  it("OpenAI Responses: input_image in the function output and in the user message", async () => {
    const { origin } = await servers.start([{ body: fixture("openai-responses/text.sse") }]);
    const provider = createOpenAIResponsesProvider({ model: "gpt-test", baseUrl: `${origin}/v1` });
    await collect(provider, request({ messages, tools: READ_TOOLS, images }));
    const body = JSON.parse(servers.current.received[0]?.body ?? "{}");
    const output = body.input.find((item: { type?: string }) => item.type === "function_call_output");
    expect(output.output).toEqual([
      { type: "input_text", text: "path: a.png" },
      { type: "input_image", image_url: `data:image/png;base64,${BASE64}` },
    ]);
    const user = body.input.find((item: { role?: string }) => item.role === "user");
    expect(user.content).toContainEqual({
      type: "input_image",
      image_url: `data:image/png;base64,${BASE64}`,
    });
  });

  it("an image whose bytes are missing is a line saying so, never silently dropped", async () => {
    const { origin } = await servers.start([{ body: fixture("anthropic/text.sse") }]);
    const provider = createAnthropicProvider({ model: "claude-test", baseUrl: `${origin}/v1` });
    await collect(provider, request({ messages, tools: READ_TOOLS }));
    const sent = servers.current.received[0]?.body ?? "";
    expect(sent).not.toContain(BASE64);
    expect(sent).toContain("[image: PNG 2x3 pixels");
  });

  it("Chat Completions: no image is sent; the model reads a line naming it", async () => {
    const { origin } = await servers.start([{ body: fixture("openai-chat/text-usage.sse") }]);
    const provider = createOpenAICompatibleProvider({ model: "m", baseUrl: `${origin}/v1` });
    await collect(provider, request({ messages, tools: READ_TOOLS, images }));
    const body = JSON.parse(servers.current.received[0]?.body ?? "{}");
    expect(JSON.stringify(body)).not.toContain(BASE64);
    const tool = body.messages.find((m: { role: string }) => m.role === "tool");
    expect(tool.content).toContain("not shown: this model endpoint (Chat Completions) is not sent images");
  });

  it("Chat Completions with image_input: image_url parts in the user message and after the tool results", async () => {
    const { origin } = await servers.start([{ body: fixture("openai-chat/text-usage.sse") }]);
    const provider = createOpenAICompatibleProvider({
      model: "m",
      baseUrl: `${origin}/v1`,
      imageInput: true,
    });
    const later: ModelMessage[] = [...messages, { role: "user", content: "and now?" }];
    await collect(provider, request({ messages: later, tools: READ_TOOLS, images }));
    const body = JSON.parse(servers.current.received[0]?.body ?? "{}");
    const part = { type: "image_url", image_url: { url: `data:image/png;base64,${BASE64}` } };
    expect(body.messages.map((m: { role: string }) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "user",
      "user",
    ]);
    expect(body.messages[1].content).toEqual([{ type: "text", text: "look at this" }, part]);
    // The tool message stays text (Chat Completions allows nothing else) and says where its image went.
    expect(body.messages[3].tool_call_id).toBe("c1");
    expect(body.messages[3].content).toContain("path: a.png\n[image: PNG 2x3 pixels");
    expect(body.messages[3].content).toContain("sent in the user message after this step's tool results");
    expect(body.messages[4].content).toEqual([
      { type: "text", text: "Images returned by tool call c1 (read):" },
      part,
    ]);
    expect(body.messages[5].content).toBe("and now?");
  });

  it("Chat Completions with image_input but missing bytes: a line saying so, no part", async () => {
    const { origin } = await servers.start([{ body: fixture("openai-chat/text-usage.sse") }]);
    const provider = createOpenAICompatibleProvider({
      model: "m",
      baseUrl: `${origin}/v1`,
      imageInput: true,
    });
    await collect(provider, request({ messages, tools: READ_TOOLS }));
    const sent = servers.current.received[0]?.body ?? "";
    expect(sent).not.toContain("image_url");
    expect(sent).toContain("its bytes could not be read from the session's artifacts");
  });

  it("the image_input profile field reaches the wire through createProvider; default off", async () => {
    const { origin } = await servers.start([
      { body: fixture("openai-chat/text-usage.sse") },
      { body: fixture("openai-chat/text-usage.sse") },
    ]);
    const base = { provider: "openai-compatible", model: "m", base_url: `${origin}/v1` };
    await collect(
      createProvider({ ...base, image_input: true }, {}),
      request({ messages, tools: READ_TOOLS, images }),
    );
    await collect(createProvider(base, {}), request({ messages, tools: READ_TOOLS, images }));
    const [withFlag, without] = servers.current.received.map((r) => r.body);
    expect(withFlag).toContain(`data:image/png;base64,${BASE64}`);
    expect(without).not.toContain(BASE64);
    expect(without).toContain("not shown: this model endpoint (Chat Completions) is not sent images");
    expect(() => createProvider({ provider: "anthropic", model: "c", image_input: true }, {})).toThrow(
      "image_input applies to openai-compatible only",
    );
  });
});
