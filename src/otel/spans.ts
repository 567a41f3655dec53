import type { AnyRecord, EventData, JournalRecord } from "../journal/vocabulary.js";
import { modelNameOf } from "../providers/provider.js";
import type { JsonObject } from "../shared/json.js";
import { spanIdOf } from "./ids.js";

/*
 * Spans derived from one session's journal records, following the OpenTelemetry GenAI semantic
 * conventions: `invoke_agent` (a turn of the session), `chat {model}` (one model request attempt)
 * and `execute_tool {tool}` (one tool call). The fold sees records one at a time, in sequence, and
 * hands back each span when the record that ends it arrives: a live export (records as they are
 * appended) and a later export (the whole journal) run the same code on the same records, so they
 * yield the same spans, each exactly once.
 */

export type AttributeValue = string | number | boolean | string[];

/** A finished span: plain data, turned into the SDK's ReadableSpan only by the exporter. */
export interface DerivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** `client`: a request leaving harness (a model request); `internal` otherwise. */
  kind: "internal" | "client";
  startMs: number;
  endMs: number;
  attributes: Record<string, AttributeValue>;
  /** Set when the operation failed: the error code. */
  error?: string;
}

/** Prompt and result content on spans: off (undefined) unless a scrubber is given. */
export type ContentScrubber = (text: string) => string;

export interface FoldOptions {
  traceId: string;
  /** The span the session's turns nest under: for a sub-agent, the parent's `agent` call. */
  parentSpanId?: string;
  /** The sub-agent's label, for `gen_ai.agent.name` (absent: the top-level session). */
  agentLabel?: string;
  content?: ContentScrubber;
}

interface OpenSpan {
  span: DerivedSpan;
}

const TURN_OPENERS = new Set(["session.started", "session.resumed", "user.input", "session.forked"]);

/** The fold over one session's records. */
export class SpanFold {
  readonly #options: FoldOptions;
  #sessionId: string | undefined;
  #provider: JsonObject | undefined;
  #sandbox: string | undefined;
  #turn: OpenSpan | undefined;
  #acceptance: boolean | undefined;
  #lastMs = 0;
  readonly #effects = new Map<string, string>();
  readonly #models = new Map<string, OpenSpan>();
  readonly #calls = new Map<string, OpenSpan>();
  /** Span id of every call seen, open or ended: batch sub-calls and sub-agents nest under it. */
  readonly #callSpans = new Map<string, string>();
  /** Sub-agent label -> the `agent` call that started it. */
  readonly #agentCalls = new Map<string, string>();
  readonly #sandboxOfCall = new Map<string, string>();

  constructor(options: FoldOptions) {
    this.#options = options;
  }

  /** The span of call `callId` of this session, when its record has been seen. */
  spanOfCall(callId: string): string | undefined {
    return this.#callSpans.get(callId);
  }

  /** The span a sub-agent labelled `label` nests under (the `agent` call that started it). */
  spanOfAgent(label: string): string | undefined {
    const callId = this.#agentCalls.get(label);
    return callId === undefined ? undefined : this.#callSpans.get(callId);
  }

  /** One record, in sequence: the spans it ends. */
  push(record: AnyRecord): DerivedSpan[] {
    const at = Date.parse(record.time);
    const ms = Number.isFinite(at) ? at : this.#lastMs;
    this.#lastMs = ms;
    const ended: DerivedSpan[] = [];
    if (TURN_OPENERS.has(record.type) && this.#turn === undefined) this.#openTurn(record, ms);
    switch (record.type) {
      case "session.started": {
        const data = record.data;
        this.#sessionId = data.session_id;
        this.#provider = data.provider;
        this.#sandbox = data.environment?.sandbox;
        for (const tool of data.tools) this.#effects.set(tool.name, tool.effect);
        if (this.#turn) this.#turn.span.attributes["gen_ai.conversation.id"] = data.session_id;
        this.#modelAttributes(this.#turn);
        break;
      }
      case "tools.changed":
        for (const tool of record.data.tools) this.#effects.set(tool.name, tool.effect);
        break;
      case "model.switched":
        this.#provider = record.data.to;
        break;
      case "user.input":
        if (this.#turn && this.#options.content)
          this.#turn.span.attributes["gen_ai.input.messages"] = this.#options.content(record.data.text);
        break;
      case "model.started":
        this.#openModel(record, ms);
        break;
      case "model.reply":
        this.#endModel(ended, record.data.step, undefined, ms, (span) => {
          const data = record.data;
          span.attributes["gen_ai.response.finish_reasons"] = [data.stop_reason];
          usageAttributes(span, data.usage);
          if (this.#options.content)
            span.attributes["gen_ai.output.messages"] = this.#options.content(data.text);
        });
        break;
      case "context.compacted":
        this.#endModel(ended, record.data.step, record.data.attempt, ms, (span) =>
          usageAttributes(span, record.data.usage),
        );
        break;
      case "model.failed":
      case "model.retryable_error":
        this.#endModel(ended, record.data.step, record.data.attempt, ms, (span) => {
          span.error = record.data.code;
          span.attributes["error.type"] = record.data.code;
        });
        break;
      case "model.protocol_error":
        this.#endModel(ended, record.data.step, record.data.attempt, ms, (span) => {
          span.error = "PROTOCOL_ERROR";
          span.attributes["error.type"] = "PROTOCOL_ERROR";
        });
        break;
      case "tool.started":
        this.#openCall(record, ms);
        break;
      case "process.spawned":
        if (record.data.sandbox_profile !== undefined)
          this.#sandboxOfCall.set(record.data.call_id, record.data.sandbox_profile);
        break;
      case "agent.started":
        this.#agentCalls.set(record.data.label, record.data.call_id);
        break;
      case "tool.result":
        this.#endCall(ended, record, ms);
        break;
      case "acceptance.checked":
        this.#acceptance = record.data.accepted;
        break;
      case "run.finished":
      case "run.stopped":
      case "run.cancelled":
      case "turn.interrupted":
        this.#endTurn(ended, record, ms);
        break;
      default:
        break;
    }
    return ended;
  }

  /**
   * The spans still open (a run that crashed or is still going), ended at the last record's time
   * and marked `harness.incomplete`: what an export of the journal as it stands shows.
   */
  flush(): DerivedSpan[] {
    const open = [...this.#calls.values(), ...this.#models.values(), ...(this.#turn ? [this.#turn] : [])];
    this.#calls.clear();
    this.#models.clear();
    this.#turn = undefined;
    return open.map(({ span }) => {
      span.endMs = Math.max(span.startMs, this.#lastMs);
      span.attributes["harness.incomplete"] = true;
      return span;
    });
  }

  #span(record: AnyRecord, name: string, ms: number, parentSpanId: string | undefined): DerivedSpan {
    return {
      traceId: this.#options.traceId,
      spanId: spanIdOf(record.hash),
      ...(parentSpanId !== undefined ? { parentSpanId } : {}),
      name,
      kind: "internal",
      startMs: ms,
      endMs: ms,
      attributes: { "harness.record_hash": record.hash, "harness.record_seq": record.seq },
    };
  }

  #openTurn(record: AnyRecord, ms: number): void {
    const span = this.#span(record, "invoke_agent", ms, this.#options.parentSpanId);
    span.attributes["gen_ai.operation.name"] = "invoke_agent";
    span.attributes["gen_ai.agent.name"] = this.#options.agentLabel ?? "harness";
    if (this.#sessionId !== undefined) span.attributes["gen_ai.conversation.id"] = this.#sessionId;
    this.#acceptance = undefined;
    this.#turn = { span };
    this.#modelAttributes(this.#turn);
  }

  #endTurn(ended: DerivedSpan[], record: AnyRecord, ms: number): void {
    const turn = this.#turn;
    if (turn === undefined) return;
    this.#turn = undefined;
    const span = turn.span;
    span.endMs = ms;
    span.attributes["harness.acceptance"] =
      this.#acceptance === undefined ? "not_checked" : this.#acceptance ? "accepted" : "rejected";
    if (record.type === "run.finished") span.attributes["harness.status"] = record.data.status;
    else if (record.type === "run.stopped") {
      span.attributes["harness.status"] = record.data.status;
      span.attributes["harness.reason"] = record.data.reason;
      if (record.data.status === "stopped") span.error = record.data.reason;
    } else span.attributes["harness.status"] = record.type === "run.cancelled" ? "cancelled" : "interrupted";
    if (this.#options.content && record.type === "run.finished")
      span.attributes["gen_ai.output.messages"] = this.#options.content(record.data.answer);
    ended.push(span);
  }

  #modelAttributes(open: OpenSpan | undefined): void {
    if (open === undefined || this.#provider === undefined) return;
    open.span.attributes["gen_ai.request.model"] = modelNameOf(this.#provider);
    if (typeof this.#provider.kind === "string")
      open.span.attributes["gen_ai.provider.name"] = this.#provider.kind;
  }

  #openModel(record: JournalRecord<"model.started">, ms: number): void {
    const model = this.#provider === undefined ? "unknown" : modelNameOf(this.#provider);
    const span = this.#span(
      record,
      `chat ${model}`,
      ms,
      this.#turn?.span.spanId ?? this.#options.parentSpanId,
    );
    span.kind = "client";
    span.attributes["gen_ai.operation.name"] = "chat";
    span.attributes["harness.step"] = record.data.step;
    span.attributes["harness.attempt"] = record.data.attempt;
    if (record.data.purpose !== undefined) span.attributes["harness.purpose"] = record.data.purpose;
    if (record.data.estimated_input_tokens !== undefined)
      span.attributes["harness.estimated_input_tokens"] = record.data.estimated_input_tokens;
    const open = { span };
    this.#modelAttributes(open);
    this.#models.set(`${record.data.step}:${record.data.attempt}`, open);
  }

  /** End the request of `step` (`attempt`, or the one open for the step when the record does not say). */
  #endModel(
    ended: DerivedSpan[],
    step: number,
    attempt: number | undefined,
    ms: number,
    finish: (span: DerivedSpan) => void,
  ): void {
    let key = attempt === undefined ? undefined : `${step}:${attempt}`;
    if (key === undefined) key = [...this.#models.keys()].filter((k) => k.startsWith(`${step}:`)).pop();
    const open = key === undefined ? undefined : this.#models.get(key);
    if (key === undefined || open === undefined) return;
    this.#models.delete(key);
    open.span.endMs = ms;
    finish(open.span);
    ended.push(open.span);
  }

  #openCall(record: JournalRecord<"tool.started">, ms: number): void {
    const data = record.data;
    const parent = this.#parentOfCall(data.parent_call_id);
    const span = this.#toolSpan(record, data.name, data.call_id, ms, parent);
    span.attributes["harness.effect"] = data.effect;
    permissionAttributes(span, data.permission);
    if (this.#options.content)
      span.attributes["gen_ai.tool.call.arguments"] = this.#options.content(JSON.stringify(data.arguments));
    this.#callSpans.set(data.call_id, span.spanId);
    this.#calls.set(data.call_id, { span });
  }

  #endCall(ended: DerivedSpan[], record: JournalRecord<"tool.result">, ms: number): void {
    const data = record.data;
    let open = this.#calls.get(data.call_id);
    if (open === undefined) {
      // A call refused before it started (denied, invalid) has only its result.
      const span = this.#toolSpan(
        record,
        data.name,
        data.call_id,
        ms,
        this.#parentOfCall(data.parent_call_id),
      );
      const effect = this.#effects.get(data.name);
      if (effect !== undefined) span.attributes["harness.effect"] = effect;
      this.#callSpans.set(data.call_id, span.spanId);
      open = { span };
    }
    this.#calls.delete(data.call_id);
    const span = open.span;
    span.endMs = Math.max(ms, span.startMs);
    const permission = data.data?.permission;
    if (span.attributes["harness.policy.decision"] === undefined && isObject(permission))
      permissionAttributes(span, permission);
    const sandbox = this.#sandboxOfCall.get(data.call_id) ?? this.#sandbox;
    if (sandbox !== undefined) span.attributes["harness.sandbox"] = sandbox;
    span.attributes["harness.outcome"] = data.operation_applied === "unknown" ? "unknown" : data.status;
    span.attributes["harness.duration_ms"] = data.duration_ms;
    if (data.status !== "ok") {
      span.error = data.error_type ?? data.status;
      span.attributes["error.type"] = span.error;
    }
    if (this.#options.content)
      span.attributes["gen_ai.tool.call.result"] = this.#options.content(data.content);
    ended.push(span);
  }

  #toolSpan(
    record: AnyRecord,
    name: string,
    callId: string,
    ms: number,
    parent: string | undefined,
  ): DerivedSpan {
    const span = this.#span(record, `execute_tool ${name}`, ms, parent);
    span.attributes["gen_ai.operation.name"] = "execute_tool";
    span.attributes["gen_ai.tool.name"] = name;
    span.attributes["gen_ai.tool.call.id"] = callId;
    return span;
  }

  /** A batch sub-call nests under the call whose program made it; a model's call under the turn. */
  #parentOfCall(parentCallId: string | undefined): string | undefined {
    const parent = parentCallId === undefined ? undefined : this.#callSpans.get(parentCallId);
    return parent ?? this.#turn?.span.spanId ?? this.#options.parentSpanId;
  }
}

function usageAttributes(span: DerivedSpan, usage: EventData<"model.reply">["usage"]): void {
  if (usage?.input_tokens !== undefined) span.attributes["gen_ai.usage.input_tokens"] = usage.input_tokens;
  if (usage?.output_tokens !== undefined) span.attributes["gen_ai.usage.output_tokens"] = usage.output_tokens;
}

function permissionAttributes(span: DerivedSpan, permission: JsonObject | undefined): void {
  if (permission === undefined) return;
  if (typeof permission.decision === "string")
    span.attributes["harness.policy.decision"] = permission.decision;
  if (typeof permission.rule === "string") span.attributes["harness.policy.rule"] = permission.rule;
  else if (typeof permission.source === "string") span.attributes["harness.policy.rule"] = permission.source;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
