import { z } from "zod";
import { DEFAULT_OUTPUT_LIMITS, scanArguments } from "../protocol/limits.js";
import type { StreamEvent } from "../protocol/types.js";
import { jsonObjectSchema } from "../shared/json.js";
import { publicUrl } from "./endpoint.js";
import { classifyFailure, formatMessage, normalizeProviderError, parseErrorBody } from "./errors.js";
import { type HttpResponse, post } from "./http-transport.js";
import { type ModelRequest, type Provider, ProviderError } from "./provider.js";
import { RequestControl } from "./request-control.js";

/**
 * A non-LLM decision source (rules, a human UI, another process) driving the same runtime.
 *
 * Wire contract, one request per model step:
 *   request:  POST <url>, `content-type: application/json`, body `{"messages": ModelMessage[],
 *             "tools": ToolSpec[]}` exactly as harness projects them.
 *   response: 2xx with ONE action as a JSON object, exactly one of
 *             `{"kind":"tool","name":<tool name>,"args":{...}}`
 *             `{"kind":"finish","status":<text>}`
 * Field sets are exact: an unknown field or kind, a missing field, or a body that is
 * not JSON, or args nested deeper than a model's call arguments may be, is rejected with
 * INVALID_REQUEST / `invalid_action` (not retryable: a deterministic policy would answer the same). A finish has no separate answer field: `status` is the text
 * recorded as the reply (e.g. "reserved", or a sentence for a human).
 *
 * Mapping to the protocol: a tool action is one `tool_call_delta` (call id `hj-<ordinal>-0`,
 * arguments split into two fragments, as a streaming model would) then `end tool_calls`; a
 * finish is `text_delta(status)` then `end stop`. Whether the tool exists and its arguments fit
 * its schema is checked by the runtime exactly as for a model.
 */

const MAX_BODY_BYTES = 1024 * 1024;

/**
 * How deep a body may nest: the action object, then its args nested as deep as a model's call
 * arguments may be. Checked on the text before parsing, since validating deeper JSON recurses
 * until the stack overflows; anything deeper would be refused as a call's arguments anyway.
 */
const MAX_BODY_DEPTH = DEFAULT_OUTPUT_LIMITS.maxDepth + 1;
const BODY_LIMITS = { ...DEFAULT_OUTPUT_LIMITS, maxDepth: MAX_BODY_DEPTH, maxStringChars: MAX_BODY_BYTES };

const toolAction = z.strictObject({
  kind: z.literal("tool"),
  name: z.string().min(1).max(256),
  args: jsonObjectSchema,
});
const finishAction = z.strictObject({
  kind: z.literal("finish"),
  status: z.string().min(1),
});
export const httpJsonActionSchema = z.discriminatedUnion("kind", [toolAction, finishAction]);
export type HttpJsonAction = z.infer<typeof httpJsonActionSchema>;

export interface HttpJsonOptions {
  /** The policy endpoint that receives the POST. */
  url: string;
  /** Label recorded in the identity (e.g. "rules-v1"). */
  model: string;
  /** Sent as `Authorization: Bearer` when set; resolved from the environment by `createProvider`. */
  apiKey?: string;
  /** Longest time for the whole exchange. */
  timeoutMs?: number;
  /** Longest time the whole request may take (default DEFAULT_REQUEST_DEADLINE_MS). */
  deadlineMs?: number;
}

export function createHttpJsonProvider(options: HttpJsonOptions): Provider {
  const secrets = options.apiKey === undefined ? [] : [options.apiKey];
  return {
    identity: { kind: "http-json", model: options.model, base_url: publicUrl(options.url) },
    async *stream(request: ModelRequest, signal: AbortSignal): AsyncGenerator<StreamEvent> {
      const action = await requestAction(request, signal, options, secrets);
      yield* actionEvents(action, request.ordinal);
    },
  };
}

/** Protocol events for one validated action. */
export function* actionEvents(action: HttpJsonAction, ordinal: number): Generator<StreamEvent> {
  if (action.kind === "finish") {
    yield { type: "text_delta", text: action.status };
    yield { type: "end", reason: "stop" };
    return;
  }
  const callId = `hj-${ordinal}-0`;
  const [head, tail] = splitInTwo(JSON.stringify(action.args));
  yield { type: "tool_call_delta", call_id: callId, name: action.name, arguments: head };
  yield { type: "tool_call_delta", call_id: callId, arguments: tail };
  yield { type: "end", reason: "tool_calls" };
}

/** Split at a code-point boundary near the middle; JSON text is always at least `{}`. */
function splitInTwo(text: string): [string, string] {
  const points = Array.from(text);
  const middle = Math.max(1, Math.floor(points.length / 2));
  return [points.slice(0, middle).join(""), points.slice(middle).join("")];
}

/** Validate a decoded body as an action, or throw INVALID_REQUEST naming what was wrong. */
export function parseAction(body: unknown): HttpJsonAction {
  let parsed: ReturnType<typeof httpJsonActionSchema.safeParse>;
  try {
    parsed = httpJsonActionSchema.safeParse(body);
  } catch (error) {
    // Only a body nested too deep for the validator's recursion gets here (callers with text
    // check its depth first); any other failure is a bug and stays one.
    if (error instanceof RangeError) throw tooDeep();
    throw error;
  }
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue === undefined || issue.path.length === 0 ? "action" : issue.path.join(".");
  const detail = issue === undefined ? "invalid" : issue.message;
  throw new ProviderError("INVALID_REQUEST", `http-json: invalid action: ${where}: ${detail}`.slice(0, 300), {
    providerCode: "invalid_action",
    retryable: false,
  });
}

async function requestAction(
  request: ModelRequest,
  signal: AbortSignal,
  options: HttpJsonOptions,
  secrets: readonly string[],
): Promise<HttpJsonAction> {
  // The timeout bounds the whole exchange: progress is never reported, so it is not an idle timer.
  const control = new RequestControl(signal, {
    idleTimeoutMs: options.timeoutMs,
    deadlineMs: options.deadlineMs,
  });
  const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
  if (options.apiKey !== undefined && options.apiKey !== "")
    headers.authorization = `Bearer ${options.apiKey}`;
  let response: HttpResponse | undefined;
  let bodyRead = false;
  try {
    if (control.signal.aborted) throw control.abortError("http-json", secrets);
    response = await post(new URL(options.url), {
      headers,
      body: JSON.stringify({ messages: request.messages, tools: request.tools }),
      signal: control.signal,
    });
    const text = await readBounded(response);
    bodyRead = true;
    if (response.status < 200 || response.status > 299) {
      throw classifyFailure({
        provider: "http-json",
        status: response.status,
        body: parseErrorBody(text),
        headers: response.headers,
        secrets,
      });
    }
    if (text.trim() === "") throw new ProviderError("EMPTY_RESPONSE", "http-json: the response had no body");
    return parseAction(parseJson(text));
  } catch (error) {
    if (control.abortedBy !== undefined) throw control.abortError("http-json", secrets);
    throw normalizeProviderError(error, { provider: "http-json", secrets });
  } finally {
    control.dispose(true);
    // A body read to its end leaves the connection reusable; anything else closes it.
    if (bodyRead) response?.release();
    else response?.close();
  }
}

function parseJson(text: string): unknown {
  if (scanArguments(text, BODY_LIMITS) !== undefined) throw tooDeep();
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderError("INVALID_REQUEST", "http-json: invalid action: the body is not JSON", {
      providerCode: "invalid_action",
      retryable: false,
    });
  }
}

async function readBounded(response: HttpResponse): Promise<string> {
  const declared = Number(response.headers["content-length"] ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  let text = "";
  let bytes = 0;
  for await (const chunk of response.body) {
    bytes += Buffer.byteLength(chunk, "utf8");
    if (bytes > MAX_BODY_BYTES) throw tooLarge();
    text += chunk;
  }
  return text;
}

/** The same answer would come again: an invalid action, not a server hiccup to retry. */
function tooDeep(): ProviderError {
  return new ProviderError(
    "INVALID_REQUEST",
    `http-json: invalid action: the body is nested deeper than ${MAX_BODY_DEPTH} levels ` +
      `(args may nest at most ${DEFAULT_OUTPUT_LIMITS.maxDepth})`,
    { providerCode: "invalid_action", retryable: false },
  );
}

function tooLarge(): ProviderError {
  return new ProviderError("INVALID_REQUEST", formatMessage("http-json", "response body exceeds 1 MiB", []), {
    providerCode: "invalid_action",
    retryable: false,
  });
}
