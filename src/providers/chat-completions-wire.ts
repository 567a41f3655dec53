import { z } from "zod";
import { type ImageRef, imageLine, type ModelMessage, type ToolSpec, type Usage } from "../protocol/types.js";
import type { JsonObject, JsonValue } from "../shared/json.js";
import { setUsageCount } from "./usage.js";

/**
 * The Chat Completions wire format: the request body harness sends and the shape of one
 * streamed chunk as vendors really send it (nullable everywhere, unknown fields ignored).
 */

type ChatMessage = { [key: string]: JsonValue };

/**
 * Harness messages as Chat Completions messages, in order, so every assistant tool call is
 * followed by its paired `tool` message exactly as the journal's projection wrote them.
 * Reasoning goes back as `reasoning_content` (DeepSeek and vLLM expect it; others ignore it).
 */
function toChatMessages(messages: readonly ModelMessage[]): ChatMessage[] {
  return messages.map(toChatMessage);
}

function toChatMessage(message: ModelMessage): ChatMessage {
  switch (message.role) {
    case "system":
      return { role: message.role, content: message.content };
    case "user":
      return { role: message.role, content: withImageLines(message.content, message.images) };
    case "assistant": {
      const out: ChatMessage = {
        role: "assistant",
        content: message.content === "" && message.calls.length > 0 ? null : message.content,
      };
      const reasoning = (message.reasoning ?? []).map((block) => block.text).join("");
      if (reasoning !== "") out.reasoning_content = reasoning;
      if (message.calls.length > 0) {
        out.tool_calls = message.calls.map((call) => ({
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: JSON.stringify(call.arguments) },
        }));
      }
      return out;
    }
    case "tool":
      return {
        role: "tool",
        tool_call_id: message.call_id,
        content: withImageLines(message.content, message.images),
      };
  }
}

/**
 * Chat Completions endpoints are not sent images (harness does not know which accept them): the
 * model reads a line per image saying what it is and that it was not shown, never nothing.
 */
function withImageLines(content: string, images: readonly ImageRef[] | undefined): string {
  if (images === undefined || images.length === 0) return content;
  const lines = images.map((image) =>
    imageLine(image, "not shown: this model endpoint (Chat Completions) is not sent images"),
  );
  return `${content}\n${lines.join("\n")}`;
}

function toChatTools(tools: readonly ToolSpec[]): JsonObject[] {
  return tools.map((tool) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.input_schema },
  }));
}

export interface ChatRequestInput {
  model: string;
  messages: readonly ModelMessage[];
  tools: readonly ToolSpec[];
  maxOutputTokens?: number;
  /** Sent as `prompt_cache_key`; only to endpoints known to accept it (see openai-compatible.ts). */
  cacheKey?: string | undefined;
}

export function chatRequestBody(input: ChatRequestInput): JsonObject {
  const body: JsonObject = {
    model: input.model,
    messages: toChatMessages(input.messages),
    stream: true,
    stream_options: { include_usage: true },
  };
  if (input.tools.length > 0) {
    body.tools = toChatTools(input.tools);
    body.tool_choice = "auto";
  }
  if (input.maxOutputTokens !== undefined) body.max_tokens = input.maxOutputTokens;
  if (input.cacheKey !== undefined) body.prompt_cache_key = input.cacheKey;
  return body;
}

const count = z.number().nullish();

const toolCallDeltaSchema = z.object({
  index: z.number().int().nonnegative().nullish(),
  id: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});

export const chatChunkSchema = z.object({
  choices: z
    .array(
      z.object({
        index: z.number().nullish(),
        delta: z
          .object({
            content: z.string().nullish(),
            reasoning_content: z.string().nullish(),
            reasoning: z.string().nullish(),
            tool_calls: z.array(toolCallDeltaSchema).nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: z
    .object({
      prompt_tokens: count,
      completion_tokens: count,
      prompt_tokens_details: z.object({ cached_tokens: count }).nullish(),
      completion_tokens_details: z.object({ reasoning_tokens: count }).nullish(),
    })
    .nullish(),
});

export type ChatChunk = z.infer<typeof chatChunkSchema>;
export type ChatToolCallDelta = z.infer<typeof toolCallDeltaSchema>;

/** Token counts as reported; a count the server did not send is left out, not set to 0. */
export function chatUsage(usage: NonNullable<ChatChunk["usage"]>): Usage | undefined {
  const out: Usage = {};
  setUsageCount(out, "input_tokens", usage.prompt_tokens);
  setUsageCount(out, "output_tokens", usage.completion_tokens);
  setUsageCount(out, "reasoning_tokens", usage.completion_tokens_details?.reasoning_tokens);
  setUsageCount(out, "cached_tokens", usage.prompt_tokens_details?.cached_tokens);
  return Object.keys(out).length > 0 ? out : undefined;
}
