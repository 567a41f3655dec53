import type { StopReason, StreamEvent, Usage } from "../protocol/types.js";
import { isJsonObject } from "../shared/json.js";
import {
  type ChatChunk,
  type ChatToolCallDelta,
  chatChunkSchema,
  chatRequestBody,
  chatUsage,
} from "./chat-completions-wire.js";
import { publicUrl } from "./endpoint.js";
import { classifyFailure, formatMessage, normalizeProviderError, parseErrorBody } from "./errors.js";
import { type HttpResponse, post, readText } from "./http-transport.js";
import { type ModelRequest, type Provider, ProviderError } from "./provider.js";
import { RequestControl } from "./request-control.js";
import { serverSentEvents } from "./sse.js";

/** Settings of an OpenAI Chat Completions compatible endpoint. */
export interface OpenAICompatibleOptions {
  model: string;
  /** The API root, e.g. `https://api.deepseek.com/v1`; `/chat/completions` is appended. */
  baseUrl: string;
  /** Resolved from the environment by `createProvider`; omitted for keyless local servers. */
  apiKey?: string;
  maxOutputTokens?: number;
  /** Longest time without progress (connecting, headers, or between content events). */
  timeoutMs?: number;
  /** Longest time the whole request may take (default DEFAULT_REQUEST_DEADLINE_MS). */
  deadlineMs?: number;
  /**
   * Send the request's `prompt_cache_key`. Off unless the endpoint is OpenAI's own: other
   * compatible servers may reject a field they do not know, and caching is never worth a failure.
   */
  promptCacheKey?: boolean;
  /**
   * The model takes image input (the profile's `image_input`): images are sent as `image_url`
   * content parts. Off by default: an endpoint that does not take them would fail the request.
   */
  imageInput?: boolean;
}

const PROVIDER = "openai-compatible";
/** Error bodies are read for classification only; a runaway body is not kept whole. */
const MAX_ERROR_BODY_CHARS = 64 * 1024;

/**
 * Chat Completions streaming at any base URL (OpenAI, DeepSeek, Groq, OpenRouter, vLLM,
 * llama.cpp, Ollama), read directly from the wire: this is the provider most runs use, the
 * format is small and stable, and the safety rules below are easier to keep exact on raw
 * chunks than on a library's reinterpretation of them (the AI SDK, used for the other APIs,
 * reports a complete-looking tool call even for a reply cut by `length`).
 *
 * - Tool calls are tracked by `index`; id and name arrive on the first fragment only; empty
 *   fragments are dropped. Calls are only ever streamed as fragments: whether they may run is
 *   decided by the `end` event and the decoder.
 * - Only `finish_reason` stop or tool_calls ends normally; length, content_filter and anything
 *   unknown end abnormally; a stream that stops before any finish reason throws TRANSPORT.
 * - An error object inside a 200 stream is classified like an HTTP error body.
 * - `reasoning_content` / `reasoning` deltas are reasoning, never answer text.
 */
export function createOpenAICompatibleProvider(options: OpenAICompatibleOptions): Provider {
  const endpoint = chatCompletionsUrl(options.baseUrl);
  const secrets = options.apiKey === undefined || options.apiKey === "" ? [] : [options.apiKey];
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "text/event-stream",
    "user-agent": "harness",
  };
  if (secrets.length > 0) headers.authorization = `Bearer ${options.apiKey}`;
  return {
    identity: { kind: PROVIDER, model: options.model, base_url: publicUrl(options.baseUrl) },
    async *stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<StreamEvent> {
      const body = JSON.stringify(
        chatRequestBody({
          model: options.model,
          messages: request.messages,
          tools: request.tools,
          ...(options.maxOutputTokens === undefined ? {} : { maxOutputTokens: options.maxOutputTokens }),
          ...(options.promptCacheKey === true ? { cacheKey: request.cacheKey } : {}),
          ...(options.imageInput === true ? { imageBytes: request.images ?? new Map() } : {}),
        }),
      );
      const control = new RequestControl(signal, {
        idleTimeoutMs: options.timeoutMs,
        deadlineMs: options.deadlineMs,
      });
      let response: HttpResponse | undefined;
      let completed = false;
      try {
        if (control.signal.aborted) throw control.abortError(PROVIDER, secrets);
        response = await post(endpoint, { headers, body, signal: control.signal });
        control.progress();
        await rejectFailedResponse(response, secrets);
        for await (const event of chatEvents(response, secrets)) {
          // Progress is content: comments, empty deltas and repeated usage chunks yield nothing.
          control.progress();
          if (event.type === "end") completed = true;
          yield event;
        }
      } catch (error) {
        if (control.abortedBy !== undefined) throw control.abortError(PROVIDER, secrets);
        throw normalizeProviderError(error, {
          provider: PROVIDER,
          secrets,
          responseHeaders: response?.headers,
        });
      } finally {
        control.dispose(completed);
        if (completed) response?.release();
        else response?.close();
      }
    },
  };
}

function chatCompletionsUrl(baseUrl: string): URL {
  const url = new URL(baseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/chat/completions`;
  return url;
}

/** Non-2xx, or a JSON body where a stream was asked for: classify and throw. */
async function rejectFailedResponse(response: HttpResponse, secrets: readonly string[]): Promise<void> {
  const failed = response.status < 200 || response.status > 299;
  const json = /application\/json/i.test(response.headers["content-type"] ?? "");
  if (!failed && !json) return;
  const body = parseErrorBody(await readText(response, MAX_ERROR_BODY_CHARS));
  if (failed) {
    throw classifyFailure({
      provider: PROVIDER,
      status: response.status,
      body,
      headers: response.headers,
      secrets,
    });
  }
  if (isJsonObject(body) && body.error !== undefined && body.error !== null) {
    throw classifyFailure({ provider: PROVIDER, body, headers: response.headers, secrets });
  }
  // A server that ignores `stream: true` answers the same way every time: retrying is no use.
  throw new ProviderError("SERVER", `${PROVIDER}: expected an event stream, got a JSON body`, {
    status: response.status,
    providerCode: "invalid_response",
    retryable: false,
  });
}

interface CallState {
  id: string;
  name: string;
}

/** The calls of one reply by index, and which one the last fragment belonged to. */
interface CallTracker {
  byIndex: Map<number, CallState>;
  last: number | undefined;
}

/** Translate one response's SSE chunks into protocol events; throws `ProviderError`. */
async function* chatEvents(response: HttpResponse, secrets: readonly string[]): AsyncGenerator<StreamEvent> {
  const calls: CallTracker = { byIndex: new Map(), last: undefined };
  let finishReason: string | undefined;
  let usage: Usage | undefined;
  let sawEvent = false;
  let done = false;
  for await (const sse of serverSentEvents(response.body)) {
    sawEvent = true;
    if (sse.data.trim() === "[DONE]") {
      done = true;
      break;
    }
    const chunk = parseChunk(sse.data, response, secrets);
    if (chunk.usage !== undefined && chunk.usage !== null) usage = chatUsage(chunk.usage) ?? usage;
    const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
    if (choice === undefined) continue;
    const delta = choice.delta;
    const reasoning = delta?.reasoning_content ?? delta?.reasoning;
    if (typeof reasoning === "string" && reasoning !== "") yield { type: "reasoning_delta", text: reasoning };
    if (typeof delta?.content === "string" && delta.content !== "") {
      yield { type: "text_delta", text: delta.content };
    }
    for (const fragment of delta?.tool_calls ?? []) {
      const event = callFragment(calls, fragment);
      if (event !== undefined) yield event;
    }
    if (typeof choice.finish_reason === "string" && choice.finish_reason !== "") {
      finishReason = choice.finish_reason;
    }
  }
  if (finishReason === undefined) {
    if (!sawEvent) throw new ProviderError("EMPTY_RESPONSE", `${PROVIDER}: the response stream was empty`);
    if (!done) throw new ProviderError("TRANSPORT", `${PROVIDER}: stream ended before the model finished`);
  }
  if (usage !== undefined) yield { type: "usage", usage };
  yield endEvent(finishReason, calls.byIndex.size);
}

function parseChunk(data: string, response: HttpResponse, secrets: readonly string[]): ChatChunk {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw malformed("a stream chunk is not JSON", secrets);
  }
  if (isJsonObject(value) && value.error !== undefined && value.error !== null) {
    throw classifyFailure({ provider: PROVIDER, body: value, headers: response.headers, secrets });
  }
  const parsed = chatChunkSchema.safeParse(value);
  if (!parsed.success) throw malformed("a stream chunk does not have the Chat Completions shape", secrets);
  return parsed.data;
}

function malformed(what: string, secrets: readonly string[]): ProviderError {
  return new ProviderError("SERVER", formatMessage(PROVIDER, `malformed response: ${what}`, secrets), {
    providerCode: "invalid_response",
  });
}

/**
 * One tool-call fragment. A call is identified by `index`; for servers that omit it, a new id
 * starts a new call and a fragment without id continues the call of the previous fragment.
 */
function callFragment(calls: CallTracker, fragment: ChatToolCallDelta): StreamEvent | undefined {
  const id = fragment.id === null || fragment.id === "" ? undefined : fragment.id;
  const index = fragment.index ?? indexWithoutIndex(calls, id);
  const args = fragment.function?.arguments ?? "";
  const known = calls.byIndex.get(index);
  if (known !== undefined) {
    if (id !== undefined && id !== known.id) {
      throw new ProviderError("SERVER", `${PROVIDER}: tool call index ${index} reused by another call`, {
        providerCode: "invalid_response",
      });
    }
    calls.last = index;
    return args === "" ? undefined : { type: "tool_call_delta", call_id: known.id, arguments: args };
  }
  const name = fragment.function?.name ?? "";
  if (id === undefined || name === "") {
    throw new ProviderError("SERVER", `${PROVIDER}: a tool call started without an id or a name`, {
      providerCode: "invalid_response",
    });
  }
  calls.byIndex.set(index, { id, name });
  calls.last = index;
  return { type: "tool_call_delta", call_id: id, name, arguments: args };
}

function indexWithoutIndex(calls: CallTracker, id: string | undefined): number {
  if (id === undefined) return calls.last ?? 0;
  for (const [index, call] of calls.byIndex) if (call.id === id) return index;
  return Math.max(-1, ...calls.byIndex.keys()) + 1;
}

function endEvent(finishReason: string | undefined, callCount: number): StreamEvent {
  const abnormal = (reason: StopReason, message: string): StreamEvent => ({ type: "end", reason, message });
  switch (finishReason) {
    case "stop":
      // Ollama and some vLLM builds end a reply with complete calls with `stop`.
      return callCount > 0 ? { type: "end", reason: "tool_calls" } : { type: "end", reason: "stop" };
    case "tool_calls":
      return callCount > 0
        ? { type: "end", reason: "tool_calls" }
        : abnormal("error", "finish reason says tool calls but none arrived");
    case "length":
      return abnormal("length", "output limit reached (length)");
    case "content_filter":
      return abnormal("content_filter", "blocked by content filter (content_filter)");
    case undefined:
      return abnormal("error", "the stream ended without a finish reason");
    default:
      return abnormal("error", `finish reason ${finishReason} is not a normal end`);
  }
}
