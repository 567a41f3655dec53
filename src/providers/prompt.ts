import type {
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultPart,
} from "@ai-sdk/provider";
import type { ModelMessage, Reasoning, ToolSpec } from "../protocol/types.js";

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
): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Prompt = [];
  for (const message of messages) {
    switch (message.role) {
      case "system":
        prompt.push({ role: "system", content: message.content });
        break;
      case "user":
        prompt.push({ role: "user", content: [{ type: "text", text: message.content }] });
        break;
      case "assistant":
        prompt.push(assistantMessage(message, reasoning));
        break;
      case "tool": {
        const part = toolResultPart(message);
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

function toolResultPart(message: Extract<ModelMessage, { role: "tool" }>): LanguageModelV3ToolResultPart {
  // Anything but "ok" is sent as an error result (Anthropic marks it `is_error`), so the model
  // cannot mistake a denied or failed call for a successful one.
  const output: LanguageModelV3ToolResultPart["output"] =
    message.status === "ok"
      ? { type: "text", value: message.content }
      : { type: "error-text", value: message.content };
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
