import type { EventData } from "../journal/vocabulary.js";
import type { JsonObject } from "../shared/json.js";
import { ERROR_CODES, type ErrorCode, ToolError } from "../tools/errors.js";
import type { ProposalRecord } from "./ports.js";
import type { FoundChange } from "./workspace-effects.js";

/**
 * The normalized result: one shape for every call, whatever happened. This is what the journal
 * records (`tool.result`, whose schema defines the shape) and what the model's observation is
 * projected from. In propose mode it also carries the captured changes, which the journal
 * records as `proposal.recorded` before the result itself, and what the call changed in the
 * workspace, which it records as `workspace.changed` in the same append.
 */
export type ToolResult = EventData<"tool.result"> & { proposals?: ProposalRecord[]; workspace?: FoundChange };

export interface CallIdentity {
  call_id: string;
  name: string;
}

/** The identity a call's result carries. */
export function identity(call: { id: string; name: string }): CallIdentity {
  return { call_id: call.id, name: call.name };
}

export function okResult(
  call: CallIdentity,
  output: { summary: string; content: string; data?: JsonObject; untrusted?: string },
  durationMs: number,
): ToolResult {
  const result: ToolResult = {
    call_id: call.call_id,
    name: call.name,
    status: "ok",
    summary: output.summary,
    content: output.content,
    duration_ms: durationMs,
  };
  if (output.data !== undefined) result.data = output.data;
  if (output.untrusted !== undefined) result.untrusted = output.untrusted;
  return result;
}

/** A failure result for a taxonomy code; status and recovery flags come from the taxonomy. */
export function errorResult(
  call: CallIdentity,
  code: ErrorCode,
  message: string,
  options: {
    hint?: string;
    data?: JsonObject;
    durationMs?: number;
    /** When the caller knows better than the code's default (e.g. the call never started). */
    operationApplied?: boolean | "unknown";
  } = {},
): ToolResult {
  const info = ERROR_CODES[code];
  const result: ToolResult = {
    call_id: call.call_id,
    name: call.name,
    status: info.status,
    error_type: code,
    summary: message,
    content: message,
    hint: options.hint ?? info.hint,
    retryable: info.retryable,
    requires_new_observation: info.requiresNewObservation,
    operation_applied: options.operationApplied ?? info.operationApplied,
    duration_ms: options.durationMs ?? 0,
  };
  if (options.data !== undefined) result.data = options.data;
  return result;
}

/** Anything a handler threw: known ToolErrors keep their code; the rest is RUNTIME_EXCEPTION. */
export function resultFromThrown(call: CallIdentity, thrown: unknown, durationMs: number): ToolResult {
  if (thrown instanceof ToolError) {
    const options: {
      hint?: string;
      data?: JsonObject;
      durationMs: number;
      operationApplied?: boolean | "unknown";
    } = { durationMs };
    if (thrown.hint !== undefined) options.hint = thrown.hint;
    if (thrown.data !== undefined) options.data = toJsonObject(thrown.data);
    if (thrown.operationApplied !== undefined) options.operationApplied = thrown.operationApplied;
    const result = errorResult(call, thrown.code, thrown.message, options);
    if (thrown.untrusted !== undefined) result.untrusted = thrown.untrusted;
    return result;
  }
  // Unknown exceptions may carry host paths or internals: the model gets a fixed message.
  const kind = thrown instanceof Error ? thrown.name : typeof thrown;
  return errorResult(call, "RUNTIME_EXCEPTION", `${call.name} failed unexpectedly (${kind})`, { durationMs });
}

/** A plain JSON copy of structured error data (drops undefined values, functions and the like). */
export function toJsonObject(data: Record<string, unknown>): JsonObject {
  return JSON.parse(JSON.stringify(data)) as JsonObject;
}
