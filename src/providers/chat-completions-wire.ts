import { z } from "zod";
import { type ImageRef, imageLine, type ModelMessage, type ToolSpec, type Usage } from "../protocol/types.js";
import type { JsonObject, JsonValue } from "../shared/json.js";
import { MISSING_IMAGE } from "./prompt.js";
import { setUsageCount } from "./usage.js";

/**
 * The Chat Completions wire format: the request body harness sends and the shape of one
 * streamed chunk as vendors really send it (nullable everywhere, unknown fields ignored).
 */

type ChatMessage = { [key: string]: JsonValue };

/**
 * What a Chat Completions endpoint is sent for images: nothing but a line each (the default,
 * since harness cannot tell which endpoints accept them), or, when the profile says the model
 * takes image input, the images themselves as data-URL content parts.
 */
type ImageMode = { kind: "lines" } | { kind: "parts"; bytes: ReadonlyMap<string, Uint8Array> };

/**
 * Harness messages as Chat Completions messages, in order, so every assistant tool call is
 * followed by its paired `tool` message exactly as the journal's projection wrote them.
 * Reasoning goes back as `reasoning_content` (DeepSeek and vLLM expect it; others ignore it).
 * A `tool` message can carry only text, so with image parts on, the images tool results
 * returned go in one user message right after that step's run of tool messages, each under a
 * line naming the call it belongs to (a user message there keeps every tool call paired).
 */
function toChatMessages(messages: readonly ModelMessage[], mode: ImageMode): ChatMessage[] {
  const out: ChatMessage[] = [];
  let pending: JsonValue[] = [];
  const flush = () => {
    if (pending.length > 0) out.push({ role: "user", content: pending });
    pending = [];
  };
  for (const message of messages) {
    if (message.role !== "tool") flush();
    out.push(toChatMessage(message, mode));
    if (message.role === "tool" && mode.kind === "parts" && (message.images ?? []).length > 0) {
      pending.push({
        type: "text",
        text: `Images returned by tool call ${message.call_id} (${message.name}):`,
      });
      pending.push(...imageParts(message.images ?? [], mode.bytes));
    }
  }
  flush();
  return out;
}

function toChatMessage(message: ModelMessage, mode: ImageMode): ChatMessage {
  switch (message.role) {
    case "system":
      return { role: message.role, content: message.content };
    case "user":
      return { role: message.role, content: userContent(message.content, message.images, mode) };
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
        content: withImageLines(
          message.content,
          message.images,
          mode.kind === "parts" ? "sent in the user message after this step's tool results" : NOT_SENT,
        ),
      };
  }
}

const NOT_SENT = "not shown: this model endpoint (Chat Completions) is not sent images";

/** The user's text, then each image as an `image_url` part (a string when no part is needed). */
function userContent(content: string, images: readonly ImageRef[] | undefined, mode: ImageMode): JsonValue {
  if (images === undefined || images.length === 0) return content;
  if (mode.kind === "lines") return withImageLines(content, images, NOT_SENT);
  return [{ type: "text", text: content }, ...imageParts(images, mode.bytes)];
}

/** Each image as a data-URL part; one whose bytes are missing is a line saying so, never dropped. */
function imageParts(images: readonly ImageRef[], bytes: ReadonlyMap<string, Uint8Array>): JsonValue[] {
  return images.map((image) => {
    const data = bytes.get(image.sha256);
    return data === undefined
      ? { type: "text", text: imageLine(image, MISSING_IMAGE) }
      : {
          type: "image_url",
          image_url: { url: `data:${image.media_type};base64,${Buffer.from(data).toString("base64")}` },
        };
  });
}

/** A line per image saying what it is and what became of it, so the model never reads nothing. */
function withImageLines(content: string, images: readonly ImageRef[] | undefined, why: string): string {
  if (images === undefined || images.length === 0) return content;
  const lines = images.map((image) => imageLine(image, why));
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
  /**
   * The profile says the model takes image input: send images as content parts, with these bytes
   * (by SHA-256). Absent: each image is a line saying it was not shown.
   */
  imageBytes?: ReadonlyMap<string, Uint8Array> | undefined;
}

export function chatRequestBody(input: ChatRequestInput): JsonObject {
  const body: JsonObject = {
    model: input.model,
    messages: toChatMessages(
      input.messages,
      input.imageBytes === undefined ? { kind: "lines" } : { kind: "parts", bytes: input.imageBytes },
    ),
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
