import { createAnthropic } from "@ai-sdk/anthropic";
import type { LanguageModelV3CallOptions, LanguageModelV3Prompt } from "@ai-sdk/provider";
import { createAiSdkProvider } from "./ai-sdk-stream.js";
import { ANTHROPIC_DEFAULT_BASE_URL, publicUrl, sdkConnection } from "./endpoint.js";
import { toFunctionTools, toLanguageModelPrompt } from "./prompt.js";
import type { ModelRequest, Provider } from "./provider.js";

export { ANTHROPIC_DEFAULT_BASE_URL } from "./endpoint.js";

export interface AnthropicOptions {
  model: string;
  /** The API root including `/v1`; `/messages` is appended. */
  baseUrl?: string;
  /** Resolved from the environment by `createProvider`; omitted only for loopback endpoints. */
  apiKey?: string;
  maxOutputTokens?: number;
  /** Enables extended thinking with this budget; signed thinking is replayed on later requests. */
  thinkingBudgetTokens?: number;
  timeoutMs?: number;
  /** Longest time the whole request may take (default DEFAULT_REQUEST_DEADLINE_MS). */
  deadlineMs?: number;
  fetch?: typeof fetch;
}

/** `stop_reason`s that end a reply normally. `max_tokens`, `refusal`, `pause_turn`... do not. */
export const ANTHROPIC_NORMAL_STOP_REASONS: ReadonlySet<string | undefined> = new Set([
  "end_turn",
  "tool_use",
]);

/**
 * Anthropic Messages streaming: text, `tool_use` with `input_json_delta`, thinking with
 * signatures (streamed as `reasoning_delta.signature`, replayed as thinking blocks), `ping`
 * anywhere, and `error` events. A stream without `message_stop` throws TRANSPORT.
 */
export function createAnthropicProvider(options: AnthropicOptions): Provider {
  const baseUrl = options.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL;
  const anthropic = createAnthropic(sdkConnection(baseUrl, options));
  return createAiSdkProvider({
    identity: { kind: "anthropic", model: options.model, base_url: publicUrl(baseUrl) },
    model: anthropic.messages(options.model),
    callOptions: (request) => anthropicCallOptions(request, options),
    mapping: {
      provider: "anthropic",
      normalRawReasons: ANTHROPIC_NORMAL_STOP_REASONS,
      secrets: options.apiKey === undefined ? [] : [options.apiKey],
    },
    timeoutMs: options.timeoutMs,
    deadlineMs: options.deadlineMs,
  });
}

function anthropicCallOptions(request: ModelRequest, options: AnthropicOptions): LanguageModelV3CallOptions {
  const callOptions: LanguageModelV3CallOptions = {
    prompt: withCacheBreakpoints(toLanguageModelPrompt(request.messages, "anthropic-signed", request.images)),
  };
  if (request.tools.length > 0) {
    callOptions.tools = toFunctionTools(request.tools);
    callOptions.toolChoice = { type: "auto" };
  }
  if (options.maxOutputTokens !== undefined) callOptions.maxOutputTokens = options.maxOutputTokens;
  if (options.thinkingBudgetTokens !== undefined) {
    callOptions.providerOptions = {
      anthropic: { thinking: { type: "enabled", budgetTokens: options.thinkingBudgetTokens } },
    };
  }
  return callOptions;
}

const EPHEMERAL = { anthropic: { cacheControl: { type: "ephemeral" } } };

/**
 * Anthropic caches only up to explicit breakpoints (at most 4). Three are set: the system message
 * (tools and system, the same for the whole session); the last message, where this request
 * writes the cache; and the end of the previous request (the message before the latest reply),
 * where the previous request wrote it, so it is read back however many blocks one step added
 * (Anthropic looks back only 20 blocks from a breakpoint). The markers are not part of the cached
 * content, so moving them keeps the prefix.
 */
function withCacheBreakpoints(prompt: LanguageModelV3Prompt): LanguageModelV3Prompt {
  const marked = new Set<number>();
  const system = prompt.findIndex((message) => message.role === "system");
  if (system !== -1) marked.add(system);
  const lastReply = prompt.findLastIndex((message) => message.role === "assistant");
  if (lastReply > 0 && prompt[lastReply - 1]!.role !== "system") marked.add(lastReply - 1);
  const last = prompt.length - 1;
  if (last >= 0 && prompt[last]!.role !== "system") marked.add(last);
  return prompt.map((message, i) => (marked.has(i) ? { ...message, providerOptions: EPHEMERAL } : message));
}
