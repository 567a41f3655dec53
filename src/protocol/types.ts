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

/** The image formats a model may be sent (by their header, never by a file's name alone). */
export const IMAGE_MEDIA_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;
export type ImageMediaType = (typeof IMAGE_MEDIA_TYPES)[number];

/**
 * An image a message carries: its bytes are a session artifact, named by SHA-256; the journal and
 * the history hold only this reference, and the bytes are attached when a request is sent.
 */
export interface ImageRef {
  artifact: string;
  sha256: string;
  media_type: ImageMediaType;
  bytes: number;
  width: number;
  height: number;
}

/** What a model is sent: always derived from the journal. */
export type ModelMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string; images?: ImageRef[] | undefined }
  | { role: "assistant"; content: string; calls: ToolCall[]; reasoning?: Reasoning[] | undefined }
  | {
      role: "tool";
      call_id: string;
      name: string;
      status: ToolStatus;
      content: string;
      images?: ImageRef[] | undefined;
    };

/** One line that stands for an image wherever it is not sent (a model without image input, a summary). */
export function imageLine(image: ImageRef, why: string): string {
  const kind = image.media_type.slice("image/".length).toUpperCase();
  return `[image: ${kind} ${image.width}x${image.height} pixels, ${image.bytes} bytes, sha256 ${image.sha256}: ${why}]`;
}

/** A tool as the model sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  input_schema: JsonObject;
}
