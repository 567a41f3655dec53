import type { JsonObject } from "../shared/json.js";

/** Why a model stream ended. Only `stop` and `tool_calls` make a reply executable. */
export type StopReason = "stop" | "tool_calls" | "length" | "content_filter" | "error" | "cancelled";
export const NORMAL_STOP_REASONS: readonly StopReason[] = ["stop", "tool_calls"];

export interface Usage {
  input_tokens?: number | undefined;
  output_tokens?: number | undefined;
  reasoning_tokens?: number | undefined;
  /** Input tokens read from the provider's prompt cache (part of input_tokens). */
  cached_tokens?: number | undefined;
  /** Input tokens written to the provider's prompt cache (Anthropic; part of input_tokens). */
  cache_write_tokens?: number | undefined;
}

/**
 * The internal stream protocol every provider speaks. Providers yield these as `unknown`
 * values; the decoder checks each one, so a provider bug cannot smuggle an action through.
 */
export type StreamEvent =
  | { type: "text_delta"; text: string }
  | { type: "reasoning_delta"; text: string; signature?: string | undefined }
  | { type: "tool_call_delta"; call_id: string; name?: string | undefined; arguments: string }
  | { type: "usage"; usage: Usage }
  | { type: "end"; reason: StopReason; message?: string | undefined };

export interface ToolCall {
  id: string;
  name: string;
  arguments: JsonObject;
  /** Set when the decoder refused the arguments; `arguments` is then `{}` and the call never runs. */
  refused?: RefusedArguments | undefined;
}

/**
 * Arguments that broke an output limit or cannot be recorded: the call stays in the reply,
 * paired with an INVALID_ARGUMENTS result that tells the model why; only bounded evidence of
 * what was sent is kept.
 */
export interface RefusedArguments {
  reason: string;
  /** Length of the argument text as sent. */
  characters: number;
  /** Its beginning, made well-formed. */
  head: string;
}

export interface Reasoning {
  text: string;
  signature?: string | undefined;
}

/** A complete, executable model reply: only the decoder produces one. */
export interface Reply {
  text: string;
  calls: ToolCall[];
  stop_reason: "stop" | "tool_calls";
  usage?: Usage | undefined;
  reasoning?: Reasoning[] | undefined;
}

export const TOOL_STATUSES = [
  "ok",
  "error",
  "invalid",
  "denied",
  "conflict",
  "timeout",
  "cancelled",
  "unknown",
] as const;
export type ToolStatus = (typeof TOOL_STATUSES)[number];

/** What a model is sent: always derived from the journal. */
export type ModelMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; calls: ToolCall[]; reasoning?: Reasoning[] | undefined }
  | { role: "tool"; call_id: string; name: string; status: ToolStatus; content: string };

/** A tool as the model sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  input_schema: JsonObject;
}
