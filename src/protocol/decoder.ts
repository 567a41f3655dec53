import { z } from "zod";
import { isJsonObject, type JsonObject } from "../shared/json.js";
import { NORMAL_STOP_REASONS, type Reasoning, type Reply, type StopReason, type Usage } from "./types.js";

/** What arrived before a stream failed: kept in the journal as evidence, never executed. */
export interface StreamEvidence {
  text: string;
  calls: { id: string; name?: string; arguments: string }[];
  stop_reason?: string;
  events: number;
}

/** A stream that did not yield a complete, executable reply. */
export class ProtocolError extends Error {
  readonly evidence: StreamEvidence;
  constructor(message: string, evidence: StreamEvidence) {
    super(message);
    this.name = "ProtocolError";
    this.evidence = evidence;
  }
}

const usageSchema = z.strictObject({
  input_tokens: z.number().int().nonnegative().optional(),
  output_tokens: z.number().int().nonnegative().optional(),
  reasoning_tokens: z.number().int().nonnegative().optional(),
  cached_tokens: z.number().int().nonnegative().optional(),
});

const eventSchema = z.discriminatedUnion("type", [
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

export type DecodeListener = (event: z.infer<typeof eventSchema>) => void;

interface PartialCall {
  id: string;
  name: string | undefined;
  arguments: string;
}

/**
 * Accumulates a model stream and yields a Reply only after an `end` with a normal reason.
 * Fragments are buffered; nothing is interpreted as an action until the stream is complete,
 * and partial JSON is never repaired.
 */
export class StreamDecoder {
  private text = "";
  private reasoning: Reasoning[] = [];
  private readonly calls = new Map<string, PartialCall>();
  private usage: Usage | undefined;
  private ended: StopReason | undefined;
  private endMessage: string | undefined;
  private count = 0;

  /** Feed one raw event; throws ProtocolError on anything outside the protocol. */
  push(raw: unknown): z.infer<typeof eventSchema> {
    this.count += 1;
    if (this.ended !== undefined) this.fail("event after end of stream");
    const parsed = eventSchema.safeParse(raw);
    if (!parsed.success) {
      const type = isJsonObject(raw) && typeof raw.type === "string" ? raw.type : typeof raw;
      this.fail(`unknown or malformed stream event (${type.slice(0, 40)})`);
    }
    const event = parsed.data;
    switch (event.type) {
      case "text_delta":
        this.text += event.text;
        break;
      case "reasoning_delta":
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

  /** Complete the stream: the reply, or a ProtocolError carrying the evidence. */
  finish(): Reply {
    if (this.ended === undefined) this.fail("stream ended without an end event (truncated)");
    if (!NORMAL_STOP_REASONS.includes(this.ended)) {
      const detail = this.endMessage ? `: ${this.endMessage}` : "";
      this.fail(`reply ended with reason "${this.ended}"${detail}; nothing from it may run`);
    }
    const calls = [...this.calls.values()].map((partial) => {
      if (partial.name === undefined) this.fail(`tool call ${partial.id} never named its tool`);
      let args: unknown;
      try {
        args = JSON.parse(partial.arguments);
      } catch {
        this.fail(`tool call ${partial.id} has arguments that are not valid JSON`);
      }
      if (!isJsonObject(args)) this.fail(`tool call ${partial.id} has arguments that are not a JSON object`);
      return { id: partial.id, name: partial.name, arguments: args as JsonObject };
    });
    const reply: Reply = {
      text: this.text,
      calls,
      stop_reason: this.ended === "tool_calls" || calls.length > 0 ? "tool_calls" : "stop",
    };
    if (this.usage !== undefined) reply.usage = this.usage;
    if (this.reasoning.length > 0) reply.reasoning = this.reasoning;
    return reply;
  }

  evidence(): StreamEvidence {
    const evidence: StreamEvidence = {
      text: this.text,
      calls: [...this.calls.values()].map((c) =>
        c.name === undefined
          ? { id: c.id, arguments: c.arguments }
          : { id: c.id, name: c.name, arguments: c.arguments },
      ),
      events: this.count,
    };
    if (this.ended !== undefined) evidence.stop_reason = this.ended;
    return evidence;
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
    const existing = this.calls.get(id);
    if (existing === undefined) {
      if (name === undefined) this.fail(`first fragment of tool call ${id} has no tool name`);
      this.calls.set(id, { id, name, arguments: fragment });
      return;
    }
    if (name !== undefined && existing.name !== undefined && name !== existing.name) {
      this.fail(`tool name changed inside call ${id}`);
    }
    existing.arguments += fragment;
  }

  private fail(message: string): never {
    throw new ProtocolError(message, this.evidence());
  }
}

/**
 * Decode a whole stream. A provider exception is rethrown after the evidence is attached
 * (so a cut connection still records what arrived).
 */
export async function decodeStream(
  stream: AsyncIterable<unknown>,
  onEvent?: DecodeListener,
): Promise<{ reply: Reply } | { error: unknown; evidence: StreamEvidence }> {
  const decoder = new StreamDecoder();
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
