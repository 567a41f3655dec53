/**
 * The four wire dialects a mock model server speaks, reduced to one neutral view: what a
 * request carries (turns and tools) and how a scripted reply is written back (SSE frames or
 * one JSON action). Only Node built-ins are used, so the benchmark can import this too.
 */

export type Dialect = "chat" | "responses" | "anthropic" | "http-json";

/** The URL path each dialect's client posts to, below the base URL the server hands out. */
export const DIALECT_PATHS: Record<Dialect, string> = {
  chat: "/v1/chat/completions",
  responses: "/v1/responses",
  anthropic: "/v1/messages",
  "http-json": "/policy",
};

/** What the client passes as its base URL: the path above, minus what the client appends. */
export const DIALECT_BASE_PATHS: Record<Dialect, string> = {
  chat: "/v1",
  responses: "/v1",
  anthropic: "/v1",
  "http-json": "/policy",
};

export interface WireCall {
  id: string;
  name: string;
  /** Arguments as sent (a JSON text; objects are serialized). */
  arguments: string;
}

export type Turn =
  | { role: "system"; text: string }
  | { role: "user"; text: string }
  | { role: "assistant"; text: string; calls: WireCall[] }
  | { role: "tool"; callId: string; content: string; isError: boolean };

export interface WireTool {
  name: string;
  description: string;
  /** The tool's JSON Schema exactly as sent. */
  schema: unknown;
}

/** A request body seen through the dialect: the conversation and the tools. */
export interface WireRequest {
  turns: Turn[];
  tools: WireTool[];
}

export interface MockUsage {
  input: number;
  output: number;
  reasoning?: number;
  cached?: number;
  /** Anthropic only: cache_creation_input_tokens. */
  cacheWrite?: number;
}

export interface PartialCall {
  id: string;
  name: string;
  /** The arguments text sent before the reply breaks off (not valid JSON on purpose). */
  argumentsPrefix: string;
}

export interface ErrorFrame {
  type: string;
  message: string;
  code?: string;
}

/** What one scripted step answers. */
export type MockReply =
  | {
      kind: "calls";
      calls: { id: string; name: string; args: Record<string, unknown> }[];
      text?: string;
      usage?: MockUsage;
    }
  | { kind: "text"; text: string; usage?: MockUsage }
  /** A reply cut by the output limit in the middle of a call's arguments: length / max_tokens / incomplete. */
  | { kind: "truncated"; call: PartialCall; usage?: MockUsage }
  /** HTTP 200, a partial call, then an error event inside the stream. */
  | { kind: "stream_error"; call: PartialCall; error: ErrorFrame }
  /** HTTP 200, a partial call, then the connection is destroyed. */
  | { kind: "cut"; call: PartialCall }
  | { kind: "http_error"; status: number; headers?: Record<string, string>; body: string }
  /** Accept the request and never answer. */
  | { kind: "stall" };

/** How a reply goes on the wire: a whole body, or a prefix followed by a cut connection. */
export type WireResponse =
  | { status: number; headers: Record<string, string>; body: string }
  | { status: number; headers: Record<string, string>; cutAfter: string };

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
};
const JSON_HEADERS = { "content-type": "application/json" };

export class WireFormatError extends Error {
  override readonly name = "WireFormatError";
}

// ---------------------------------------------------------------------------------------------
// Reading requests

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function list(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new WireFormatError(`${what} is not an array`);
  return value;
}

function optionalList(value: unknown, what: string): unknown[] {
  return value === undefined ? [] : list(value, what);
}

/** A tool definition's name, description and schema (under the dialect's `schemaKey`). */
function wireTool(value: unknown, where: string, schemaKey: "parameters" | "input_schema"): WireTool {
  if (!isObject(value)) throw new WireFormatError(`${where} is not an object`);
  return {
    name: text(value.name, `${where}.name`),
    description: typeof value.description === "string" ? value.description : "",
    schema: value[schemaKey],
  };
}

function text(value: unknown, what: string): string {
  if (typeof value !== "string") throw new WireFormatError(`${what} is not a string`);
  return value;
}

/** Content that may be a string or an array of text parts (every dialect allows both somewhere). */
function flatten(value: unknown, what: string): string {
  if (typeof value === "string") return value;
  if (value === null || value === undefined) return "";
  return list(value, what)
    .map((part, i) => {
      if (!isObject(part)) throw new WireFormatError(`${what}[${i}] is not an object`);
      return typeof part.text === "string" ? part.text : "";
    })
    .join("");
}

function argumentsText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value ?? {});
}

/** Parse a request body of the given dialect into turns and tools; throws WireFormatError. */
export function readRequest(dialect: Dialect, body: unknown): WireRequest {
  if (!isObject(body)) throw new WireFormatError("the request body is not a JSON object");
  switch (dialect) {
    case "chat":
      return readChat(body);
    case "responses":
      return readResponses(body);
    case "anthropic":
      return readAnthropic(body);
    case "http-json":
      return readHttpJson(body);
  }
}

function readChat(body: Record<string, unknown>): WireRequest {
  const turns: Turn[] = [];
  for (const [i, raw] of list(body.messages, "messages").entries()) {
    if (!isObject(raw)) throw new WireFormatError(`messages[${i}] is not an object`);
    const where = `messages[${i}]`;
    switch (raw.role) {
      case "system":
      case "developer":
        turns.push({ role: "system", text: flatten(raw.content, `${where}.content`) });
        break;
      case "user":
        turns.push({ role: "user", text: flatten(raw.content, `${where}.content`) });
        break;
      case "assistant": {
        const calls = (raw.tool_calls === undefined ? [] : list(raw.tool_calls, `${where}.tool_calls`)).map(
          (call, j) => {
            if (!isObject(call) || !isObject(call.function))
              throw new WireFormatError(`${where}.tool_calls[${j}] is malformed`);
            return {
              id: text(call.id, `${where}.tool_calls[${j}].id`),
              name: text(call.function.name, `${where}.tool_calls[${j}].function.name`),
              arguments: argumentsText(call.function.arguments),
            };
          },
        );
        turns.push({ role: "assistant", text: flatten(raw.content, `${where}.content`), calls });
        break;
      }
      case "tool":
        turns.push({
          role: "tool",
          callId: text(raw.tool_call_id, `${where}.tool_call_id`),
          content: flatten(raw.content, `${where}.content`),
          isError: false,
        });
        break;
      default:
        throw new WireFormatError(`${where} has an unknown role`);
    }
  }
  const tools = optionalList(body.tools, "tools").map((tool, i) => {
    if (!isObject(tool) || tool.type !== "function")
      throw new WireFormatError(`tools[${i}] is not a function tool`);
    return wireTool(tool.function, `tools[${i}].function`, "parameters");
  });
  return { turns, tools };
}

function readResponses(body: Record<string, unknown>): WireRequest {
  const turns: Turn[] = [];
  const assistant = (): Extract<Turn, { role: "assistant" }> => {
    const last = turns.at(-1);
    if (last?.role === "assistant") return last;
    const created: Extract<Turn, { role: "assistant" }> = { role: "assistant", text: "", calls: [] };
    turns.push(created);
    return created;
  };
  for (const [i, raw] of list(body.input, "input").entries()) {
    if (!isObject(raw)) throw new WireFormatError(`input[${i}] is not an object`);
    const where = `input[${i}]`;
    if (raw.type === "function_call") {
      assistant().calls.push({
        id: text(raw.call_id, `${where}.call_id`),
        name: text(raw.name, `${where}.name`),
        arguments: argumentsText(raw.arguments),
      });
    } else if (raw.type === "function_call_output") {
      turns.push({
        role: "tool",
        callId: text(raw.call_id, `${where}.call_id`),
        content: flatten(raw.output, `${where}.output`),
        isError: false,
      });
    } else if (raw.role === "system" || raw.role === "developer") {
      turns.push({ role: "system", text: flatten(raw.content, `${where}.content`) });
    } else if (raw.role === "user") {
      turns.push({ role: "user", text: flatten(raw.content, `${where}.content`) });
    } else if (raw.role === "assistant") {
      assistant().text += flatten(raw.content, `${where}.content`);
    } else {
      throw new WireFormatError(`${where} is neither a message nor a function call item`);
    }
  }
  if (typeof body.instructions === "string") turns.unshift({ role: "system", text: body.instructions });
  const tools = optionalList(body.tools, "tools").map((tool, i) => {
    if (!isObject(tool) || tool.type !== "function")
      throw new WireFormatError(`tools[${i}] is not a function tool`);
    return wireTool(tool, `tools[${i}]`, "parameters");
  });
  return { turns, tools };
}

function readAnthropic(body: Record<string, unknown>): WireRequest {
  const turns: Turn[] = [];
  if (body.system !== undefined) turns.push({ role: "system", text: flatten(body.system, "system") });
  for (const [i, raw] of list(body.messages, "messages").entries()) {
    if (!isObject(raw)) throw new WireFormatError(`messages[${i}] is not an object`);
    const where = `messages[${i}]`;
    const blocks =
      typeof raw.content === "string"
        ? [{ type: "text", text: raw.content }]
        : list(raw.content, `${where}.content`);
    if (raw.role === "assistant") {
      const turn: Extract<Turn, { role: "assistant" }> = { role: "assistant", text: "", calls: [] };
      for (const [j, block] of blocks.entries()) {
        if (!isObject(block)) throw new WireFormatError(`${where}.content[${j}] is not an object`);
        if (block.type === "text") turn.text += text(block.text, `${where}.content[${j}].text`);
        if (block.type === "tool_use") {
          turn.calls.push({
            id: text(block.id, `${where}.content[${j}].id`),
            name: text(block.name, `${where}.content[${j}].name`),
            arguments: argumentsText(block.input),
          });
        }
      }
      turns.push(turn);
      continue;
    }
    if (raw.role !== "user") throw new WireFormatError(`${where} has an unknown role`);
    for (const [j, block] of blocks.entries()) {
      if (!isObject(block)) throw new WireFormatError(`${where}.content[${j}] is not an object`);
      if (block.type === "tool_result") {
        turns.push({
          role: "tool",
          callId: text(block.tool_use_id, `${where}.content[${j}].tool_use_id`),
          content: flatten(block.content, `${where}.content[${j}].content`),
          isError: block.is_error === true,
        });
      } else if (block.type === "text") {
        turns.push({ role: "user", text: text(block.text, `${where}.content[${j}].text`) });
      }
    }
  }
  const tools = optionalList(body.tools, "tools").map((tool, i) =>
    wireTool(tool, `tools[${i}]`, "input_schema"),
  );
  return { turns, tools };
}

function readHttpJson(body: Record<string, unknown>): WireRequest {
  const turns: Turn[] = [];
  for (const [i, raw] of list(body.messages, "messages").entries()) {
    if (!isObject(raw)) throw new WireFormatError(`messages[${i}] is not an object`);
    const where = `messages[${i}]`;
    switch (raw.role) {
      case "system":
      case "user":
        turns.push({ role: raw.role, text: text(raw.content, `${where}.content`) });
        break;
      case "assistant":
        turns.push({
          role: "assistant",
          text: text(raw.content, `${where}.content`),
          calls: list(raw.calls, `${where}.calls`).map((call, j) => {
            if (!isObject(call)) throw new WireFormatError(`${where}.calls[${j}] is not an object`);
            return {
              id: text(call.id, `${where}.calls[${j}].id`),
              name: text(call.name, `${where}.calls[${j}].name`),
              arguments: argumentsText(call.arguments),
            };
          }),
        });
        break;
      case "tool":
        turns.push({
          role: "tool",
          callId: text(raw.call_id, `${where}.call_id`),
          content: text(raw.content, `${where}.content`),
          isError: raw.status !== "ok",
        });
        break;
      default:
        throw new WireFormatError(`${where} has an unknown role`);
    }
  }
  const tools = list(body.tools, "tools").map((tool, i) => wireTool(tool, `tools[${i}]`, "input_schema"));
  return { turns, tools };
}

// ---------------------------------------------------------------------------------------------
// Writing replies

type SseItem = { event?: string; data: unknown };

function sse(items: readonly SseItem[]): string {
  return items
    .map((item) => {
      const data = typeof item.data === "string" ? item.data : JSON.stringify(item.data);
      return `${item.event === undefined ? "" : `event: ${item.event}\n`}data: ${data}\n\n`;
    })
    .join("");
}

/** Split text into up to three pieces, as a streaming model sends argument fragments. */
export function fragments(value: string): string[] {
  if (value.length < 3) return [value];
  const a = Math.floor(value.length / 3);
  const b = Math.floor((2 * value.length) / 3);
  return [value.slice(0, a), value.slice(a, b), value.slice(b)];
}

/** The wire form of one scripted reply. */
export function writeReply(dialect: Dialect, reply: Exclude<MockReply, { kind: "stall" }>): WireResponse {
  if (reply.kind === "http_error") {
    return { status: reply.status, headers: { ...JSON_HEADERS, ...reply.headers }, body: reply.body };
  }
  switch (dialect) {
    case "chat":
      return writeChat(reply);
    case "responses":
      return writeResponses(reply);
    case "anthropic":
      return writeAnthropic(reply);
    case "http-json":
      return writeHttpJson(reply);
  }
}

type StreamReply = Exclude<MockReply, { kind: "stall" } | { kind: "http_error" }>;

function streamed(body: SseItem[], reply: StreamReply, tail: SseItem[]): WireResponse {
  if (reply.kind === "cut") return { status: 200, headers: SSE_HEADERS, cutAfter: sse(body) };
  return { status: 200, headers: SSE_HEADERS, body: sse([...body, ...tail]) };
}

function writeChat(reply: StreamReply): WireResponse {
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) => ({
    data: {
      id: "chatcmpl-mock",
      object: "chat.completion.chunk",
      created: 1_760_000_000,
      model: "mock-model",
      choices,
      ...extra,
    },
  });
  const delta = (d: Record<string, unknown>, finish: string | null = null) =>
    chunk([{ index: 0, delta: d, finish_reason: finish }]);
  const items: SseItem[] = [delta({ role: "assistant", content: "" })];
  const calls: { id: string; name: string; args: string }[] =
    reply.kind === "calls"
      ? reply.calls.map((c) => ({ id: c.id, name: c.name, args: JSON.stringify(c.args) }))
      : reply.kind === "text"
        ? []
        : [{ id: reply.call.id, name: reply.call.name, args: reply.call.argumentsPrefix }];
  const replyText = reply.kind === "calls" ? (reply.text ?? "") : reply.kind === "text" ? reply.text : "";
  for (const piece of replyText === "" ? [] : fragments(replyText)) items.push(delta({ content: piece }));
  for (const [index, call] of calls.entries()) {
    items.push(
      delta({
        tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }],
      }),
    );
    for (const piece of fragments(call.args))
      items.push(delta({ tool_calls: [{ index, function: { arguments: piece } }] }));
  }
  const tail: SseItem[] = [];
  if (reply.kind === "stream_error") {
    tail.push({
      data: {
        error: { message: reply.error.message, type: reply.error.type, code: reply.error.code ?? null },
      },
    });
    return streamed(items, reply, tail);
  }
  const finish = reply.kind === "truncated" ? "length" : calls.length > 0 ? "tool_calls" : "stop";
  tail.push(delta({}, finish));
  const usage = reply.kind === "cut" ? undefined : reply.usage;
  if (usage !== undefined) {
    tail.push(
      chunk([], {
        usage: {
          prompt_tokens: usage.input,
          completion_tokens: usage.output,
          total_tokens: usage.input + usage.output,
          prompt_tokens_details: { cached_tokens: usage.cached ?? 0 },
          completion_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
        },
      }),
    );
  }
  tail.push({ data: "[DONE]" });
  return streamed(items, reply, tail);
}

function writeResponses(reply: StreamReply): WireResponse {
  let sequence = 0;
  const event = (type: string, fields: Record<string, unknown>): SseItem => ({
    event: type,
    data: { type, ...fields, sequence_number: sequence++ },
  });
  const response = (status: string, extra: Record<string, unknown> = {}) => ({
    id: "resp_mock",
    object: "response",
    created_at: 1_760_000_000,
    status,
    model: "mock-model",
    output: [],
    incomplete_details: null,
    error: null,
    usage: null,
    ...extra,
  });
  const items: SseItem[] = [event("response.created", { response: response("in_progress") })];
  let outputIndex = 0;
  const replyText = reply.kind === "calls" ? (reply.text ?? "") : reply.kind === "text" ? reply.text : "";
  if (replyText !== "") {
    const item = { id: "msg_mock", type: "message", status: "in_progress", role: "assistant", content: [] };
    items.push(event("response.output_item.added", { output_index: outputIndex, item }));
    for (const piece of fragments(replyText)) {
      items.push(
        event("response.output_text.delta", {
          item_id: item.id,
          output_index: outputIndex,
          content_index: 0,
          delta: piece,
          logprobs: [],
        }),
      );
    }
    items.push(
      event("response.output_item.done", {
        output_index: outputIndex,
        item: {
          ...item,
          status: "completed",
          content: [{ type: "output_text", text: replyText, annotations: [] }],
        },
      }),
    );
    outputIndex += 1;
  }
  const complete = reply.kind === "calls" ? reply.calls : [];
  const partial = reply.kind === "calls" || reply.kind === "text" ? undefined : reply.call;
  for (const call of complete) {
    const args = JSON.stringify(call.args);
    const itemId = `fc_${call.id}`;
    const item = {
      id: itemId,
      type: "function_call",
      status: "in_progress",
      call_id: call.id,
      name: call.name,
    };
    items.push(
      event("response.output_item.added", { output_index: outputIndex, item: { ...item, arguments: "" } }),
    );
    for (const piece of fragments(args)) {
      items.push(
        event("response.function_call_arguments.delta", {
          item_id: itemId,
          output_index: outputIndex,
          delta: piece,
        }),
      );
    }
    items.push(
      event("response.function_call_arguments.done", {
        item_id: itemId,
        output_index: outputIndex,
        arguments: args,
      }),
    );
    items.push(
      event("response.output_item.done", {
        output_index: outputIndex,
        item: { ...item, status: "completed", arguments: args },
      }),
    );
    outputIndex += 1;
  }
  if (partial !== undefined) {
    const itemId = `fc_${partial.id}`;
    items.push(
      event("response.output_item.added", {
        output_index: outputIndex,
        item: {
          id: itemId,
          type: "function_call",
          status: "in_progress",
          call_id: partial.id,
          name: partial.name,
          arguments: "",
        },
      }),
    );
    for (const piece of fragments(partial.argumentsPrefix)) {
      items.push(
        event("response.function_call_arguments.delta", {
          item_id: itemId,
          output_index: outputIndex,
          delta: piece,
        }),
      );
    }
  }
  const usage = reply.kind === "cut" || reply.kind === "stream_error" ? undefined : reply.usage;
  const usageBody =
    usage === undefined
      ? null
      : {
          input_tokens: usage.input,
          input_tokens_details: { cached_tokens: usage.cached ?? 0 },
          output_tokens: usage.output,
          output_tokens_details: { reasoning_tokens: usage.reasoning ?? 0 },
          total_tokens: usage.input + usage.output,
        };
  const tail: SseItem[] = [];
  if (reply.kind === "stream_error") {
    const error = {
      type: reply.error.type,
      code: reply.error.code ?? reply.error.type,
      message: reply.error.message,
    };
    tail.push(event("error", { error: { ...error, param: null } }));
    tail.push(event("response.failed", { response: response("failed", { error }) }));
  } else if (reply.kind === "truncated") {
    tail.push(
      event("response.incomplete", {
        response: response("incomplete", {
          incomplete_details: { reason: "max_output_tokens" },
          usage: usageBody,
        }),
      }),
    );
  } else {
    tail.push(event("response.completed", { response: response("completed", { usage: usageBody }) }));
  }
  return streamed(items, reply, tail);
}

function writeAnthropic(reply: StreamReply): WireResponse {
  const usage = reply.kind === "cut" || reply.kind === "stream_error" ? undefined : reply.usage;
  const items: SseItem[] = [
    {
      event: "message_start",
      data: {
        type: "message_start",
        message: {
          id: "msg_mock",
          type: "message",
          role: "assistant",
          model: "mock-model",
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: usage?.input ?? 0,
            cache_read_input_tokens: usage?.cached ?? 0,
            cache_creation_input_tokens: usage?.cacheWrite ?? 0,
            output_tokens: 1,
          },
        },
      },
    },
    { event: "ping", data: { type: "ping" } },
  ];
  let index = 0;
  const replyText = reply.kind === "calls" ? (reply.text ?? "") : reply.kind === "text" ? reply.text : "";
  if (replyText !== "") {
    items.push({
      event: "content_block_start",
      data: { type: "content_block_start", index, content_block: { type: "text", text: "" } },
    });
    for (const piece of fragments(replyText)) {
      items.push({
        event: "content_block_delta",
        data: { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } },
      });
    }
    items.push({ event: "content_block_stop", data: { type: "content_block_stop", index } });
    index += 1;
  }
  const calls: { id: string; name: string; args: string; complete: boolean }[] =
    reply.kind === "calls"
      ? reply.calls.map((c) => ({ id: c.id, name: c.name, args: JSON.stringify(c.args), complete: true }))
      : reply.kind === "text"
        ? []
        : [{ id: reply.call.id, name: reply.call.name, args: reply.call.argumentsPrefix, complete: false }];
  for (const call of calls) {
    items.push({
      event: "content_block_start",
      data: {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: call.id, name: call.name, input: {} },
      },
    });
    for (const piece of ["", ...fragments(call.args)]) {
      items.push({
        event: "content_block_delta",
        data: {
          type: "content_block_delta",
          index,
          delta: { type: "input_json_delta", partial_json: piece },
        },
      });
    }
    if (call.complete)
      items.push({ event: "content_block_stop", data: { type: "content_block_stop", index } });
    index += 1;
  }
  const tail: SseItem[] = [];
  if (reply.kind === "stream_error") {
    tail.push({
      event: "error",
      data: { type: "error", error: { type: reply.error.type, message: reply.error.message } },
    });
    return streamed(items, reply, tail);
  }
  if (reply.kind === "truncated") {
    // The API closes the open block before reporting max_tokens.
    tail.push({ event: "content_block_stop", data: { type: "content_block_stop", index: index - 1 } });
  }
  const stopReason = reply.kind === "truncated" ? "max_tokens" : calls.length > 0 ? "tool_use" : "end_turn";
  tail.push({
    event: "message_delta",
    data: {
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: usage?.output ?? 0 },
    },
  });
  tail.push({ event: "message_stop", data: { type: "message_stop" } });
  return streamed(items, reply, tail);
}

function writeHttpJson(reply: StreamReply): WireResponse {
  switch (reply.kind) {
    case "text":
      return {
        status: 200,
        headers: JSON_HEADERS,
        body: JSON.stringify({ kind: "finish", status: reply.text }),
      };
    case "calls": {
      const [call, ...more] = reply.calls;
      if (call === undefined || more.length > 0)
        throw new WireFormatError("http-json answers exactly one tool action per request");
      return {
        status: 200,
        headers: JSON_HEADERS,
        body: JSON.stringify({ kind: "tool", name: call.name, args: call.args }),
      };
    }
    case "cut": {
      const prefix = `{"kind":"tool","name":${JSON.stringify(reply.call.name)},"args":${reply.call.argumentsPrefix}`;
      return { status: 200, headers: JSON_HEADERS, cutAfter: prefix };
    }
    case "truncated":
    case "stream_error":
      throw new WireFormatError(`http-json has no streaming form of "${reply.kind}"`);
  }
}
