import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3FinishReason,
  LanguageModelV3StreamPart,
  LanguageModelV3Usage,
} from "@ai-sdk/provider";
import type { StopReason, StreamEvent, Usage } from "../protocol/types.js";
import { isJsonObject } from "../shared/json.js";
import { normalizeProviderError } from "./errors.js";
import { type ModelRequest, type Provider, ProviderError, type ProviderIdentity } from "./provider.js";
import { RequestControl } from "./request-control.js";
import type { HeaderSource } from "./retry-after.js";
import { setUsageCount } from "./usage.js";

/**
 * The bridge from an AI SDK `LanguageModelV3.doStream()` to harness's stream protocol.
 *
 * Safety rules, because the SDK's parts look complete even when the reply is not:
 * - A `tool-call` part arrives even after `length`, and when a stream just stops. Tool calls
 *   are therefore only streamed as fragments; whether they may run is decided by the `end`.
 * - An `end` with a normal reason is emitted only when the finish part's unified reason is
 *   stop/tool-calls AND the raw vendor reason is on the provider's allow-list AND every started
 *   call completed. Anything else ends with a non-normal reason.
 * - No finish part (Anthropic at a clean EOF), no terminal vendor event, a read error or an
 *   error part: a `ProviderError` is thrown and no `end` is emitted.
 */

export interface StreamMappingOptions {
  provider: string;
  /** Raw vendor finish reasons that may end a reply normally (`undefined` allowed explicitly). */
  normalRawReasons: ReadonlySet<string | undefined>;
  secrets: readonly string[];
  /**
   * For APIs whose SDK emits a finish part even when the terminal event never came: returns
   * true for a raw chunk that is the vendor's terminal event. Enables raw chunks.
   */
  isTerminalChunk?: (raw: unknown) => boolean;
  responseHeaders?: HeaderSource;
}

interface CallState {
  name: string;
  sent: string;
  completed: boolean;
}

/** Translate AI SDK stream parts into protocol events. Throws `ProviderError` on failure. */
async function* mapStreamParts(
  parts: AsyncIterable<LanguageModelV3StreamPart>,
  options: StreamMappingOptions,
): AsyncGenerator<StreamEvent> {
  const calls = new Map<string, CallState>();
  let terminalSeen = options.isTerminalChunk === undefined;
  const fail = (error: unknown): ProviderError =>
    normalizeProviderError(error, {
      provider: options.provider,
      secrets: options.secrets,
      responseHeaders: options.responseHeaders,
    });

  for await (const part of parts) {
    switch (part.type) {
      case "text-delta":
        if (part.delta !== "") yield { type: "text_delta", text: part.delta };
        break;
      case "reasoning-delta": {
        const signature = anthropicSignature(part.providerMetadata);
        if (part.delta === "" && signature === undefined) break;
        yield signature === undefined
          ? { type: "reasoning_delta", text: part.delta }
          : { type: "reasoning_delta", text: part.delta, signature };
        break;
      }
      case "tool-input-start": {
        if (part.providerExecuted === true) break;
        // The Responses SDK replays buffered input for undeclared tools after the call completed.
        const known = calls.get(part.id);
        if (known?.completed === true) break;
        if (known !== undefined)
          throw new ProviderError("SERVER", `${options.provider}: duplicate tool call id`);
        calls.set(part.id, { name: part.toolName, sent: "", completed: false });
        yield { type: "tool_call_delta", call_id: part.id, name: part.toolName, arguments: "" };
        break;
      }
      case "tool-input-delta": {
        const call = calls.get(part.id);
        if (call === undefined || call.completed || part.delta === "") break;
        call.sent += part.delta;
        yield { type: "tool_call_delta", call_id: part.id, arguments: part.delta };
        break;
      }
      case "tool-call": {
        if (part.providerExecuted === true) break;
        const event = completeCall(calls, part.toolCallId, part.toolName, part.input, options.provider);
        if (event !== undefined) yield event;
        break;
      }
      case "raw":
        if (options.isTerminalChunk?.(part.rawValue) === true) terminalSeen = true;
        break;
      case "error":
        throw fail(part.error);
      case "finish": {
        if (!terminalSeen) {
          throw new ProviderError("TRANSPORT", `${options.provider}: stream ended before its terminal event`);
        }
        const usage = toUsage(part.usage);
        if (usage !== undefined) yield { type: "usage", usage };
        yield endEvent(part.finishReason, calls, options.normalRawReasons);
        return;
      }
      default:
        // stream-start, response-metadata, text/reasoning start and end, sources, files and
        // provider-executed results carry nothing the protocol records.
        break;
    }
  }
  throw new ProviderError("TRANSPORT", `${options.provider}: stream ended before the model finished`);
}

/**
 * The SDK's final `tool-call` input must equal what was streamed; when no fragment was
 * streamed (Anthropic sends `{}` only at the end) the missing tail is sent now.
 */
function completeCall(
  calls: Map<string, CallState>,
  id: string,
  name: string,
  input: string,
  provider: string,
): StreamEvent | undefined {
  const call = calls.get(id);
  if (call === undefined) {
    calls.set(id, { name, sent: input, completed: true });
    return { type: "tool_call_delta", call_id: id, name, arguments: input };
  }
  if (call.completed) throw new ProviderError("SERVER", `${provider}: tool call completed twice`);
  call.completed = true;
  if (input === call.sent) return undefined;
  if (input.startsWith(call.sent)) {
    const tail = input.slice(call.sent.length);
    call.sent = input;
    return { type: "tool_call_delta", call_id: id, arguments: tail };
  }
  throw new ProviderError(
    "SERVER",
    `${provider}: streamed tool call arguments disagree with the final call`,
    {
      providerCode: "inconsistent_tool_call",
    },
  );
}

function endEvent(
  finish: LanguageModelV3FinishReason,
  calls: Map<string, CallState>,
  normalRawReasons: ReadonlySet<string | undefined>,
): StreamEvent {
  const raw = finish.raw;
  const label = raw ?? finish.unified;
  const abnormal = (reason: StopReason, message: string): StreamEvent => ({ type: "end", reason, message });
  switch (finish.unified) {
    case "length":
      return abnormal("length", `output limit reached (${label})`);
    case "content-filter":
      return abnormal("content_filter", `blocked by content filter (${label})`);
    case "error":
      return abnormal("error", `stream reported an error (${label})`);
    case "other":
      return abnormal("error", `unrecognised finish reason (${label})`);
    case "stop":
    case "tool-calls":
      break;
  }
  if (!normalRawReasons.has(raw)) return abnormal("error", `finish reason ${label} is not a normal end`);
  const states = [...calls.values()];
  if (states.some((call) => !call.completed)) return abnormal("error", "a tool call did not complete");
  if (states.length > 0) return { type: "end", reason: "tool_calls" };
  if (finish.unified === "tool-calls")
    return abnormal("error", "finish reason says tool calls but none arrived");
  return { type: "end", reason: "stop" };
}

function anthropicSignature(metadata: unknown): string | undefined {
  if (!isJsonObject(metadata) || !isJsonObject(metadata.anthropic)) return undefined;
  const signature = metadata.anthropic.signature;
  return typeof signature === "string" && signature !== "" ? signature : undefined;
}

function toUsage(usage: LanguageModelV3Usage | undefined): Usage | undefined {
  if (usage === undefined) return undefined;
  const out: Usage = {};
  setUsageCount(out, "input_tokens", usage.inputTokens?.total);
  setUsageCount(out, "output_tokens", usage.outputTokens?.total);
  setUsageCount(out, "reasoning_tokens", usage.outputTokens?.reasoning);
  setUsageCount(out, "cached_tokens", usage.inputTokens?.cacheRead);
  setUsageCount(out, "cache_write_tokens", usage.inputTokens?.cacheWrite);
  return Object.keys(out).length > 0 ? out : undefined;
}

export interface AiSdkProviderOptions {
  identity: ProviderIdentity;
  model: LanguageModelV3;
  /** The call options for one request, without the abort signal (added here). */
  callOptions(request: ModelRequest): LanguageModelV3CallOptions;
  mapping: Omit<StreamMappingOptions, "responseHeaders">;
  /** Longest time without progress (connecting, headers, or between content events). */
  timeoutMs?: number | undefined;
  /** Longest time the whole request may take (default DEFAULT_REQUEST_DEADLINE_MS). */
  deadlineMs?: number | undefined;
}

/**
 * A `Provider` over an AI SDK language model: one `doStream` per request, never retried here
 * (the engine journals and retries attempts), with caller cancellation, an idle timeout that only
 * content restarts and an overall deadline.
 */
export function createAiSdkProvider(options: AiSdkProviderOptions): Provider {
  const { identity, model, mapping } = options;
  return {
    identity,
    async *stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<StreamEvent> {
      const control = new RequestControl(signal, {
        idleTimeoutMs: options.timeoutMs,
        deadlineMs: options.deadlineMs,
      });
      const normalize = (error: unknown, headers?: HeaderSource): ProviderError =>
        normalizeProviderError(error, {
          provider: mapping.provider,
          secrets: mapping.secrets,
          responseHeaders: headers,
          abortedBy: control.abortedBy,
        });

      let reader: ReadableStreamDefaultReader<LanguageModelV3StreamPart> | undefined;
      let finished = false;
      try {
        if (control.signal.aborted) throw control.abortError(mapping.provider, mapping.secrets);
        let result: Awaited<ReturnType<LanguageModelV3["doStream"]>>;
        try {
          const callOptions: LanguageModelV3CallOptions = {
            ...options.callOptions(request),
            abortSignal: control.signal,
          };
          if (mapping.isTerminalChunk !== undefined) callOptions.includeRawChunks = true;
          result = await model.doStream(callOptions);
        } catch (error) {
          throw normalize(error);
        }
        const headers = result.response?.headers;
        const activeReader = result.stream.getReader();
        reader = activeReader;
        control.progress();
        const parts = readParts(activeReader, (error) => normalize(error, headers));
        const mapped = mapStreamParts(parts, { ...mapping, responseHeaders: headers });
        for await (const event of mapped) {
          // Progress is content: metadata, raw chunks, pings and empty deltas map to nothing.
          control.progress();
          if (event.type === "end") finished = true;
          yield event;
        }
      } catch (error) {
        // An abort surfaces as whatever the SDK threw; report why we aborted instead.
        if (control.abortedBy === undefined) throw error;
        throw control.abortError(mapping.provider, mapping.secrets);
      } finally {
        control.dispose(finished);
        if (reader !== undefined) await reader.cancel().catch(() => undefined);
      }
    },
  };
}

async function* readParts(
  reader: ReadableStreamDefaultReader<LanguageModelV3StreamPart>,
  normalize: (error: unknown) => ProviderError,
): AsyncGenerator<LanguageModelV3StreamPart> {
  while (true) {
    let next: Awaited<ReturnType<typeof reader.read>>;
    try {
      next = await reader.read();
    } catch (error) {
      throw normalize(error);
    }
    if (next.done) return;
    yield next.value;
  }
}
