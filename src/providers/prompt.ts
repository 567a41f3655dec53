import type {
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultPart,
} from "@ai-sdk/provider";
import { imageLine, type ModelMessage, type Reasoning, type ToolSpec } from "../protocol/types.js";

/**
 * How an assistant message's reasoning is sent back:
 * - "none": dropped (OpenAI Responses without stored reasoning items).
 * - "text": as plain reasoning text (Chat Completions `reasoning_content`).
 * - "anthropic-signed": only blocks with a signature, as thinking blocks carrying it; unsigned
 *   reasoning is dropped because Anthropic rejects thinking it did not sign.
 */
export type ReasoningReplay = "none" | "text" | "anthropic-signed";

/**
 * Map harness messages to the AI SDK prompt, in order. Consecutive tool results are grouped
 * into one tool message (each API expects the results of one reply together); nothing is
 * reordered, so every call stays followed by its paired result as the projection wrote it.
 */
export function toLanguageModelPrompt(
  messages: readonly ModelMessage[],
  reasoning: ReasoningReplay,
  images: ReadonlyMap<string, Uint8Array> = new Map(),
): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Prompt = [];
  for (const message of messages) {
    switch (message.role) {
      case "system":
        prompt.push({ role: "system", content: message.content });
        break;
      case "user":
        prompt.push({ role: "user", content: userContent(message, images) });
        break;
      case "assistant":
        prompt.push(assistantMessage(message, reasoning));
        break;
      case "tool": {
        const part = toolResultPart(message, images);
        const last = prompt.at(-1);
        if (last?.role === "tool") last.content.push(part);
        else prompt.push({ role: "tool", content: [part] });
        break;
      }
    }
  }
  return prompt;
}

type AssistantMessage = Extract<ModelMessage, { role: "assistant" }>;
type AssistantContent = Extract<LanguageModelV3Message, { role: "assistant" }>["content"];

function assistantMessage(message: AssistantMessage, replay: ReasoningReplay): LanguageModelV3Message {
  const content: AssistantContent = [];
  for (const block of message.reasoning ?? []) {
    const part = reasoningPart(block, replay);
    if (part !== undefined) content.push(part);
  }
  if (message.content !== "" || message.calls.length === 0)
    content.push({ type: "text", text: message.content });
  for (const call of message.calls) {
    content.push({ type: "tool-call", toolCallId: call.id, toolName: call.name, input: call.arguments });
  }
  return { role: "assistant", content };
}

function reasoningPart(block: Reasoning, replay: ReasoningReplay): AssistantContent[number] | undefined {
  switch (replay) {
    case "none":
      return undefined;
    case "text":
      return block.text === "" ? undefined : { type: "reasoning", text: block.text };
    case "anthropic-signed":
      if (block.signature === undefined || block.signature === "") return undefined;
      return {
        type: "reasoning",
        text: block.text,
        providerOptions: { anthropic: { signature: block.signature } },
      };
  }
}

type UserContent = Extract<LanguageModelV3Message, { role: "user" }>["content"];

export const MISSING_IMAGE = "its bytes could not be read from the session's artifacts, so it is not shown";

/** The text, then each image as a file part (Anthropic an image block, Responses an input_image). */
function userContent(
  message: Extract<ModelMessage, { role: "user" }>,
  images: ReadonlyMap<string, Uint8Array>,
): UserContent {
  const content: UserContent = [{ type: "text", text: message.content }];
  for (const image of message.images ?? []) {
    const bytes = images.get(image.sha256);
    content.push(
      bytes === undefined
        ? { type: "text", text: imageLine(image, MISSING_IMAGE) }
        : { type: "file", mediaType: image.media_type, data: bytes },
    );
  }
  return content;
}

function toolResultPart(
  message: Extract<ModelMessage, { role: "tool" }>,
  images: ReadonlyMap<string, Uint8Array>,
): LanguageModelV3ToolResultPart {
  // Anything but "ok" is sent as an error result (Anthropic marks it `is_error`), so the model
  // cannot mistake a denied or failed call for a successful one.
  const output: LanguageModelV3ToolResultPart["output"] =
    message.status !== "ok"
      ? { type: "error-text", value: message.content }
      : message.images === undefined || message.images.length === 0
        ? { type: "text", value: message.content }
        : {
            type: "content",
            value: [
              { type: "text", text: message.content },
              ...message.images.map((image) => {
                const bytes = images.get(image.sha256);
                return bytes === undefined
                  ? { type: "text" as const, text: imageLine(image, MISSING_IMAGE) }
                  : {
                      type: "image-data" as const,
                      data: Buffer.from(bytes).toString("base64"),
                      mediaType: image.media_type,
                    };
              }),
            ],
          };
  return { type: "tool-result", toolCallId: message.call_id, toolName: message.name, output };
}

/** Tool specs as AI SDK function tools; the JSON Schema is passed through unchanged. */
export function toFunctionTools(tools: readonly ToolSpec[]): LanguageModelV3FunctionTool[] {
  return tools.map((tool) => ({
    type: "function",
    name: tool.name,
    description: tool.description,
    inputSchema: tool.input_schema as LanguageModelV3FunctionTool["inputSchema"],
  }));
}
