import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModelV3CallOptions } from "@ai-sdk/provider";
import { createAiSdkProvider } from "./ai-sdk-stream.js";
import { publicUrl } from "./endpoint.js";
import { toFunctionTools, toLanguageModelPrompt } from "./prompt.js";
import type { ModelRequest, Provider } from "./provider.js";

/** Settings of an OpenAI Chat Completions compatible endpoint. */
export interface OpenAICompatibleOptions {
  model: string;
  /** The API root, e.g. `https://api.deepseek.com/v1`; `/chat/completions` is appended. */
  baseUrl: string;
  /** Resolved from the environment by `createProvider`; omitted for keyless local servers. */
  apiKey?: string;
  maxOutputTokens?: number;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** Chat Completions `finish_reason`s that end a reply normally. */
export const CHAT_NORMAL_FINISH_REASONS: ReadonlySet<string | undefined> = new Set(["stop", "tool_calls"]);

/**
 * Chat Completions streaming at any base URL (OpenAI, DeepSeek, Groq, OpenRouter, vLLM,
 * llama.cpp, Ollama). Usage is requested with `stream_options.include_usage`; reasoning
 * (`reasoning_content` / `reasoning`) is streamed as reasoning and sent back as
 * `reasoning_content`.
 */
export function createOpenAICompatibleProvider(options: OpenAICompatibleOptions): Provider {
  const settings: Parameters<typeof createOpenAICompatible>[0] = {
    name: "harness",
    baseURL: options.baseUrl,
    includeUsage: true,
  };
  if (options.apiKey !== undefined && options.apiKey !== "") settings.apiKey = options.apiKey;
  if (options.fetch !== undefined) settings.fetch = options.fetch;
  const model = createOpenAICompatible(settings).chatModel(options.model);
  return createAiSdkProvider({
    identity: { kind: "openai-compatible", model: options.model, base_url: publicUrl(options.baseUrl) },
    model,
    callOptions: (request) => chatCallOptions(request, options.maxOutputTokens),
    mapping: {
      provider: "openai-compatible",
      normalRawReasons: CHAT_NORMAL_FINISH_REASONS,
      secrets: options.apiKey === undefined ? [] : [options.apiKey],
    },
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
  });
}

function chatCallOptions(
  request: ModelRequest,
  maxOutputTokens: number | undefined,
): LanguageModelV3CallOptions {
  const callOptions: LanguageModelV3CallOptions = { prompt: toLanguageModelPrompt(request.messages, "text") };
  if (request.tools.length > 0) {
    callOptions.tools = toFunctionTools(request.tools);
    callOptions.toolChoice = { type: "auto" };
  }
  if (maxOutputTokens !== undefined) callOptions.maxOutputTokens = maxOutputTokens;
  return callOptions;
}
