import { createOpenAI } from "@ai-sdk/openai";
import type { LanguageModelV3CallOptions } from "@ai-sdk/provider";
import { isJsonObject } from "../shared/json.js";
import { createAiSdkProvider } from "./ai-sdk-stream.js";
import { OPENAI_DEFAULT_BASE_URL, publicUrl, sdkConnection } from "./endpoint.js";
import { toFunctionTools, toLanguageModelPrompt } from "./prompt.js";
import type { ModelRequest, Provider } from "./provider.js";

export { OPENAI_DEFAULT_BASE_URL } from "./endpoint.js";

export interface OpenAIResponsesOptions {
  model: string;
  baseUrl?: string;
  /** Resolved from the environment by `createProvider`; omitted only for loopback endpoints. */
  apiKey?: string;
  maxOutputTokens?: number;
  timeoutMs?: number;
  /** Longest time the whole request may take (default DEFAULT_REQUEST_DEADLINE_MS). */
  deadlineMs?: number;
  fetch?: typeof fetch;
}

const TERMINAL_EVENTS: ReadonlySet<string> = new Set([
  "response.completed",
  "response.incomplete",
  "response.failed",
]);

/**
 * The OpenAI Responses API. Requests are stateless (`store: false`): the journal is the only
 * history, so nothing is referenced by server-side id and reasoning items are not replayed.
 * `response.completed` is the only normal terminal event; `response.incomplete` ends with
 * `length`/`content_filter`, and `response.failed` or an `error` event throws.
 */
export function createOpenAIResponsesProvider(options: OpenAIResponsesOptions): Provider {
  const baseUrl = options.baseUrl ?? OPENAI_DEFAULT_BASE_URL;
  const openai = createOpenAI(sdkConnection(baseUrl, options));
  return createAiSdkProvider({
    identity: { kind: "openai", model: options.model, base_url: publicUrl(baseUrl) },
    model: openai.responses(options.model),
    callOptions: (request) => responsesCallOptions(request, options.maxOutputTokens),
    mapping: {
      provider: "openai",
      // A completed response has no incomplete_details, so its raw reason is undefined.
      normalRawReasons: new Set([undefined]),
      secrets: options.apiKey === undefined ? [] : [options.apiKey],
      isTerminalChunk: (raw) =>
        isJsonObject(raw) && typeof raw.type === "string" && TERMINAL_EVENTS.has(raw.type),
    },
    timeoutMs: options.timeoutMs,
    deadlineMs: options.deadlineMs,
  });
}

function responsesCallOptions(
  request: ModelRequest,
  maxOutputTokens: number | undefined,
): LanguageModelV3CallOptions {
  const callOptions: LanguageModelV3CallOptions = {
    prompt: toLanguageModelPrompt(request.messages, "none", request.images),
    providerOptions: {
      openai: {
        store: false,
        ...(request.cacheKey === undefined ? {} : { promptCacheKey: request.cacheKey }),
      },
    },
  };
  if (request.tools.length > 0) {
    callOptions.tools = toFunctionTools(request.tools);
    callOptions.toolChoice = { type: "auto" };
  }
  if (maxOutputTokens !== undefined) callOptions.maxOutputTokens = maxOutputTokens;
  return callOptions;
}
