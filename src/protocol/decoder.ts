import { z } from "zod";
import { type CompiledCheck, deferredCheck } from "../shared/compiled-check.js";
import { isJsonObject, type JsonObject } from "../shared/json.js";
import { isWellFormed, toWellFormed } from "../shared/unicode.js";
import { DEFAULT_OUTPUT_LIMITS, type OutputLimits, scanArguments, unrecordableValue } from "./limits.js";
import {
  NORMAL_STOP_REASONS,
  type Reasoning,
  type Reply,
  type StopReason,
  type ToolCall,
  type Usage,
} from "./types.js";

/** What arrived before a stream failed: kept in the journal as evidence, never executed. */
export interface StreamEvidence {
  text: string;
  calls: { id: string; name?: string; arguments: string }[];
  stop_reason?: string;
  events: number;
}

/** A stream that did not yield a complete, executable reply. */
export class ProtocolError extends Error {
  override readonly name = "ProtocolError";
  constructor(
    message: string,
    readonly evidence: StreamEvidence,
  ) {
    super(message);
  }
}

const usageSchema = z.strictObject({
  input_tokens: z.number().int().nonnegative().optional(),
  output_tokens: z.number().int().nonnegative().optional(),
  reasoning_tokens: z.number().int().nonnegative().optional(),
  cached_tokens: z.number().int().nonnegative().optional(),
  cache_write_tokens: z.number().int().nonnegative().optional(),
});

export const streamEventSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("text_delta"), text: z.string() }),
  z.strictObject({ type: z.literal("reasoning_delta"), text: z.string(), signature: z.string().optional() }),
  z.strictObject({
    type: z.literal("tool_call_delta"),
    call_id: z.string().min(1),
    name: z.string().min(1).optional(),
    arguments: z.string(),
  }),
  z.strictObject({ type: z.literal("usage"), usage: usageSchema }),
  z.strictObject({
    type: z.literal("end"),
    reason: z.enum(["stop", "tool_calls", "length", "content_filter", "error", "cancelled"]),
    message: z.string().optional(),
  }),
]);

type StreamEvent = z.infer<typeof streamEventSchema>;

/** Each event type's keys in the schema's order: what a parse's output holds of an event that passed. */
const EVENT_KEYS = new Map<string, readonly string[]>(
  streamEventSchema.options.map((option) => [option.shape.type.value, Object.keys(option.shape)]),
);
const USAGE_KEYS = Object.keys(usageSchema.shape);

let eventCheck: CompiledCheck | undefined;

/** `keys` of `value` that are there (as the parse decides it: the `in` operator), in that order. */
function present(value: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (key in value) out[key] = value[key];
  return out;
}

/**
 * The other events (one usage and one end per reply), by the check generated from the schema
 * (shared/compiled-check.ts, generated after the first few), which is what the schema would accept; the result is what its parse
 * returns, a fresh object. Undefined when the check fails: the schema then decides and explains.
 */
function checkedEvent(raw: unknown): StreamEvent | undefined {
  eventCheck ??= deferredCheck(streamEventSchema);
  if (!eventCheck(raw)) return undefined;
  const event = raw as Record<string, unknown>;
  const out = present(event, EVENT_KEYS.get(event.type as string) ?? []);
  if (out.type === "usage") out.usage = present(event.usage as Record<string, unknown>, USAGE_KEYS);
  return out as StreamEvent;
}

export type DecodeListener = (event: StreamEvent) => void;

/**
 * The two events a stream is made of, hundreds per reply, checked by hand when their shape is
 * exactly the schema's: a plain object with exactly these keys and string values. Anything else,
 * including every malformed event, goes through the schema, which decides and explains. Measured
 * against the schema's parse for every event, this is a few times cheaper per event.
 */
function quickEvent(raw: unknown): StreamEvent | undefined {
  if (typeof raw !== "object" || raw === null || Object.getPrototypeOf(raw) !== Object.prototype)
    return undefined;
  const event = raw as Record<string, unknown>;
  const keys = Object.keys(event).length;
  if (event.type === "text_delta") {
    return keys === 2 && typeof event.text === "string"
      ? { type: "text_delta", text: event.text }
      : undefined;
  }
  if (event.type !== "tool_call_delta") return undefined;
  const { call_id: id, name, arguments: args } = event;
  if (typeof id !== "string" || id.length === 0 || typeof args !== "string") return undefined;
  if (name === undefined) {
    return keys === 3 && !("name" in event)
      ? { type: "tool_call_delta", call_id: id, arguments: args }
      : undefined;
  }
  if (keys !== 4 || typeof name !== "string" || name.length === 0) return undefined;
  return { type: "tool_call_delta", call_id: id, name, arguments: args };
}

/** Evidence is kept, never executed: enough of it to see what happened, bounded for the journal. */
const EVIDENCE_CHARS = 4096;
const EVIDENCE_CALLS = 16;
/** How much of refused arguments is kept, so the journal shows what was sent. */
const HEAD_CHARS = 256;
const MESSAGE_CHARS = 1000;

interface PartialCall {
  id: string;
  name: string | undefined;
  /** Buffered argument text; emptied when the call is refused for size. */
  arguments: string;
  /** Argument characters received, buffered or not. */
  characters: number;
  head: string;
  refused: string | undefined;
}

/**
 * Accumulates a model stream and yields a Reply only after an `end` with a normal reason.
 * Fragments are buffered; nothing is interpreted as an action until the stream is complete,
 * and partial JSON is never repaired. Output limits (limits.ts) bound what is buffered: a call
 * whose arguments break one stays in the reply as refused (the model is told why); a stream
 * that breaks a limit of the reply as a whole is a ProtocolError. Nothing but a ProtocolError
 * ever leaves `push` or `finish`.
 */
export class StreamDecoder {
  private text = "";
  private textChars = 0;
  private streamChars = 0;
  private bufferedArguments = 0;
  private reasoning: Reasoning[] = [];
  private readonly calls = new Map<string, PartialCall>();
  private usage: Usage | undefined;
  private ended: StopReason | undefined;
  private endMessage: string | undefined;
  private count = 0;

  constructor(private readonly limits: OutputLimits = DEFAULT_OUTPUT_LIMITS) {}

  /** Feed one raw event; throws ProtocolError on anything outside the protocol or its limits. */
  push(raw: unknown): StreamEvent {
    return this.guarded(() => this.read(raw));
  }

  /** Complete the stream: the reply, or a ProtocolError carrying the evidence. */
  finish(): Reply {
    return this.guarded(() => this.complete());
  }

  evidence(): StreamEvidence {
    const evidence: StreamEvidence = {
      text: clip(this.text, EVIDENCE_CHARS, this.textChars),
      calls: [...this.calls.values()].slice(0, EVIDENCE_CALLS).map((c) => {
        const args =
          c.refused === undefined
            ? clip(c.arguments, EVIDENCE_CHARS)
            : clip(c.head, HEAD_CHARS, c.characters);
        const id = clip(c.id, this.limits.maxCallIdChars);
        return c.name === undefined
          ? { id, arguments: args }
          : { id, name: clip(c.name, this.limits.maxNameChars), arguments: args };
      }),
      events: this.count,
    };
    if (this.ended !== undefined) evidence.stop_reason = this.ended;
    return evidence;
  }

  /**
   * Whatever goes wrong inside the decoder (a RangeError from a limit nobody foresaw) is a
   * protocol error of this reply, never an exception that looks like a transport failure.
   */
  private guarded<T>(step: () => T): T {
    try {
      return step();
    } catch (error) {
      if (error instanceof ProtocolError) throw error;
      const name = error instanceof Error ? error.name : typeof error;
      return this.fail(`the reply could not be processed (${clip(name, 40)})`);
    }
  }

  private read(raw: unknown): StreamEvent {
    this.count += 1;
    if (this.ended !== undefined) this.fail("event after end of stream");
    let event = quickEvent(raw) ?? checkedEvent(raw);
    if (event === undefined) {
      const parsed = streamEventSchema.safeParse(raw);
      if (!parsed.success) {
        const type = isJsonObject(raw) && typeof raw.type === "string" ? raw.type : typeof raw;
        this.fail(`unknown or malformed stream event (${clip(type, 40)})`);
      }
      event = parsed.data;
    }
    switch (event.type) {
      case "text_delta":
        this.countText(event.text.length);
        this.text += event.text;
        break;
      case "reasoning_delta":
        this.countText(event.text.length + (event.signature?.length ?? 0));
        this.addReasoning(event.text, event.signature);
        break;
      case "tool_call_delta":
        this.addCallFragment(event.call_id, event.name, event.arguments);
        break;
      case "usage":
        this.usage = { ...this.usage, ...event.usage };
        break;
      case "end":
        this.ended = event.reason;
        this.endMessage = event.message;
        break;
    }
    return event;
  }

  private complete(): Reply {
    if (this.ended === undefined) this.fail("stream ended without an end event (truncated)");
    if (!NORMAL_STOP_REASONS.includes(this.ended)) {
      const detail = this.endMessage ? `: ${clip(this.endMessage, MESSAGE_CHARS)}` : "";
      this.fail(`reply ended with reason "${this.ended}"${detail}; nothing from it may run`);
    }
    const calls = [...this.calls.values()].map((partial) => this.completeCall(partial));
    const reply: Reply = {
      text: toWellFormed(this.text),
      calls,
      stop_reason: this.ended === "tool_calls" || calls.length > 0 ? "tool_calls" : "stop",
    };
    if (this.usage !== undefined) reply.usage = this.usage;
    if (this.reasoning.length > 0) {
      reply.reasoning = this.reasoning.map((part) => {
        const clean: Reasoning = { text: toWellFormed(part.text) };
        if (part.signature !== undefined) clean.signature = toWellFormed(part.signature);
        return clean;
      });
    }
    return reply;
  }

  private completeCall(partial: PartialCall): ToolCall {
    if (partial.name === undefined) this.fail(`tool call ${partial.id} never named its tool`);
    const refuse = (reason: string): ToolCall => ({
      id: partial.id,
      name: partial.name as string,
      arguments: {},
      refused: { reason, characters: partial.characters, head: toWellFormed(partial.head) },
    });
    if (partial.refused !== undefined) return refuse(partial.refused);
    const tooDeep = scanArguments(partial.arguments, this.limits);
    if (tooDeep !== undefined) return refuse(tooDeep);
    let args: unknown;
    try {
      args = JSON.parse(partial.arguments);
    } catch {
      this.fail(`tool call ${partial.id} has arguments that are not valid JSON`);
    }
    if (!isJsonObject(args)) this.fail(`tool call ${partial.id} has arguments that are not a JSON object`);
    const unrecordable = unrecordableValue(args);
    if (unrecordable !== undefined) return refuse(unrecordable);
    return { id: partial.id, name: partial.name, arguments: args as JsonObject };
  }

  private countText(characters: number): void {
    this.countStream(characters);
    this.textChars += characters;
    if (this.textChars > this.limits.maxTextChars) {
      this.fail(`the reply's text is longer than ${this.limits.maxTextChars} characters`);
    }
  }

  private countStream(characters: number): void {
    this.streamChars += characters;
    if (this.streamChars > this.limits.maxStreamChars) {
      this.fail(`the reply is longer than ${this.limits.maxStreamChars} characters`);
    }
  }

  private addReasoning(text: string, signature: string | undefined): void {
    const last = this.reasoning.at(-1);
    if (last !== undefined && last.signature === undefined) {
      last.text += text;
      if (signature !== undefined) last.signature = signature;
    } else {
      const part: Reasoning = { text };
      if (signature !== undefined) part.signature = signature;
      this.reasoning.push(part);
    }
  }

  private addCallFragment(id: string, name: string | undefined, fragment: string): void {
    this.countStream(fragment.length);
    let call = this.calls.get(id);
    if (call === undefined) {
      this.checkIdentifier(id, "tool call id", this.limits.maxCallIdChars);
      if (name === undefined) this.fail(`first fragment of tool call ${id} has no tool name`);
      this.checkIdentifier(name, "tool name", this.limits.maxNameChars);
      if (this.calls.size >= this.limits.maxCalls) {
        this.fail(`the reply has more than ${this.limits.maxCalls} tool calls`);
      }
      call = { id, name, arguments: "", characters: 0, head: "", refused: undefined };
      this.calls.set(id, call);
    } else if (name !== undefined && call.name !== undefined && name !== call.name) {
      this.fail(`tool name changed inside call ${id}`);
    }
    this.appendArguments(call, fragment);
  }

  private appendArguments(call: PartialCall, fragment: string): void {
    call.characters += fragment.length;
    if (call.head.length < HEAD_CHARS) call.head += fragment.slice(0, HEAD_CHARS - call.head.length);
    if (call.refused !== undefined) return;
    if (call.characters > this.limits.maxCallArgumentsChars) {
      this.refuseForSize(
        call,
        `the arguments are longer than ${this.limits.maxCallArgumentsChars} characters`,
      );
    } else if (this.bufferedArguments + fragment.length > this.limits.maxReplyArgumentsChars) {
      this.refuseForSize(
        call,
        `the reply's arguments together are longer than ${this.limits.maxReplyArgumentsChars} characters`,
      );
    } else {
      call.arguments += fragment;
      this.bufferedArguments += fragment.length;
    }
  }

  /** Stop buffering a call that broke a size limit: what it sent is dropped, its length kept. */
  private refuseForSize(call: PartialCall, reason: string): void {
    this.bufferedArguments -= call.arguments.length;
    call.arguments = "";
    call.refused = reason;
  }

  /** Ids and names are recorded and echoed verbatim, so they must be short and well-formed. */
  private checkIdentifier(value: string, what: string, max: number): void {
    if (value.length > max) this.fail(`a ${what} is longer than ${max} characters`);
    if (!isWellFormed(value)) this.fail(`a ${what} is not well-formed Unicode (lone surrogate)`);
  }

  private fail(message: string): never {
    throw new ProtocolError(message, this.evidence());
  }
}

/** Bounded, well-formed evidence of a complete reply that still cannot be recorded as one. */
export function replyEvidence(reply: Reply): StreamEvidence {
  return {
    text: clip(reply.text, EVIDENCE_CHARS),
    calls: reply.calls.slice(0, EVIDENCE_CALLS).map((call) => ({
      id: clip(call.id, EVIDENCE_CHARS),
      name: clip(call.name, EVIDENCE_CHARS),
      arguments: call.refused
        ? clip(call.refused.head, HEAD_CHARS, call.refused.characters)
        : clipJson(call.arguments),
    })),
    stop_reason: reply.stop_reason,
    events: 0,
  };
}

function clipJson(value: JsonObject): string {
  try {
    return clip(JSON.stringify(value), EVIDENCE_CHARS);
  } catch {
    return "(arguments could not be shown)";
  }
}

/** At most `max` characters of `text`, well-formed, with a note of how long it was in all. */
function clip(text: string, max: number, total = text.length): string {
  if (total <= max && text.length <= max) return toWellFormed(text);
  return `${toWellFormed(text.slice(0, max))}…[${total} characters in all]`;
}

/**
 * Decode a whole stream. A provider exception is rethrown after the evidence is attached
 * (so a cut connection still records what arrived).
 */
export async function decodeStream(
  stream: AsyncIterable<unknown>,
  onEvent?: DecodeListener,
  limits: OutputLimits = DEFAULT_OUTPUT_LIMITS,
): Promise<{ reply: Reply } | { error: unknown; evidence: StreamEvidence }> {
  const decoder = new StreamDecoder(limits);
  try {
    for await (const raw of stream) {
      const event = decoder.push(raw);
      onEvent?.(event);
    }
    return { reply: decoder.finish() };
  } catch (error) {
    return { error, evidence: error instanceof ProtocolError ? error.evidence : decoder.evidence() };
  }
}
