import { RetryBudget, type RetryPolicy } from "../shared/retry-policy.js";
import { sleep } from "../shared/sleep.js";
import { ToolError, TRANSIENT_ERROR_CODES } from "../tools/errors.js";
import type { ToolContext } from "../tools/tool.js";
import type { Deadlines } from "./deadlines.js";
import type { RetryLimits, RuntimeOptions } from "./environment.js";
import type { HookLog } from "./hook-log.js";
import type { Recorder } from "./ports.js";
import type { Prepared } from "./prepare.js";
import {
  type CallIdentity,
  errorResult,
  identity,
  okResult,
  resultFromThrown,
  type ToolResult,
  toJsonObject,
} from "./result.js";

/** What running a handler needs from the runtime. */
export interface Execution {
  options: Pick<RuntimeOptions, "retry" | "settleGraceMs" | "timeoutFor" | "sleep" | "random" | "callSignal">;
  hooks: HookLog;
  /** Where each attempt's timeout waits. */
  deadlines: Deadlines;
  /** The context the handler of this call gets. */
  context(prepared: Prepared, signal: AbortSignal): ToolContext;
}

const TIMEOUT = Symbol("timeout");
/** Failures of the infrastructure rather than of the call, worth another attempt. */

/**
 * Run a call's handler with timeout, cancellation and wrap hooks. Retries happen only for
 * pure/idempotent tools, only on transient codes, within the retry policy (shared/retry-policy.ts), each one
 * journaled (`tool.retrying`) before it waits.
 */
export async function executeWithRetries(
  prepared: Prepared,
  execution: Execution,
  signal: AbortSignal,
  recorder: Recorder,
): Promise<{ result: ToolResult; attempts: number }> {
  const { call, entry } = prepared;
  const { options } = execution;
  const tool = entry.tool;
  const timeoutMs = options.timeoutFor?.(tool) ?? tool.timeoutMs;
  const retriable = tool.idempotency === "pure" || tool.idempotency === "idempotent";
  const budget = new RetryBudget(toolRetryPolicy(options.retry), options.random ?? Math.random);
  let attempts = 0;
  let result: ToolResult;
  for (;;) {
    attempts += 1;
    result = await attempt(prepared, execution, timeoutMs, signal);
    const transient = result.error_type !== undefined && TRANSIENT_ERROR_CODES.has(result.error_type);
    if (signal.aborted) break;
    const retry = budget.next({ retryable: transient && retriable });
    if (!retry.retry) break;
    await recorder.record([
      {
        type: "tool.retrying",
        data: {
          call_id: call.id,
          attempt: retry.attempt,
          error_type: result.error_type ?? "",
          message: result.summary,
          retry_in_ms: retry.delayMs,
        },
      },
    ]);
    await (options.sleep ?? sleep)(retry.delayMs, signal);
    if (signal.aborted) {
      // Cancelled during the back-off: no further attempt; the failed one's outcome stays unknown.
      result = errorResult(
        identity(call),
        "CANCELLED",
        `${call.name} was cancelled while waiting to retry after ${result.error_type ?? "a failure"}.`,
        { data: { last_error: result.error_type ?? null } },
      );
      break;
    }
  }
  return { result, attempts };
}

/**
 * One attempt. A handler that ignores its signal (timeout or cancellation) is abandoned after the
 * grace period: the result says its outcome is unknown rather than waiting for it forever.
 */
async function attempt(
  prepared: Prepared,
  execution: Execution,
  timeoutMs: number,
  runSignal: AbortSignal,
): Promise<ToolResult> {
  const { call, entry } = prepared;
  const { hooks, options } = execution;
  const id = identity(call);
  const controller = new AbortController();
  const began = Date.now();
  // Settles with an "outcome unknown" result once the grace period after an abort passes
  // without the handler stopping. Started by `abort` itself rather than by a listener on the
  // signal: every abort goes through it.
  let abandon: (result: ToolResult) => void = () => undefined;
  const abandoned = new Promise<ToolResult>((resolve) => {
    abandon = resolve;
  });
  let grace: NodeJS.Timeout | undefined;
  const abort = (reason: unknown) => {
    if (controller.signal.aborted) return;
    controller.abort(reason);
    grace = setTimeout(() => {
      const timedOut = reason === TIMEOUT;
      abandon(
        errorResult(
          id,
          timedOut ? "TIMEOUT" : "CANCELLED",
          timedOut
            ? `${call.name} did not finish within ${timeoutMs} ms and did not stop when asked; its outcome is unknown.`
            : `${call.name} was cancelled and did not stop in time; its outcome is unknown.`,
          { durationMs: Date.now() - began, data: { abandoned: true } },
        ),
      );
    }, options.settleGraceMs);
    grace.unref();
  };
  const onRunAbort = () => abort(runSignal.reason);
  if (runSignal.aborted) abort(runSignal.reason);
  else runSignal.addEventListener("abort", onRunAbort, { once: true });
  const callSignal = execution.options.callSignal?.(call.id);
  const onCallAbort = () => abort(callSignal?.reason);
  if (callSignal?.aborted) abort(callSignal.reason);
  else callSignal?.addEventListener("abort", onCallAbort, { once: true });
  const cancelTimeout = execution.deadlines.add(timeoutMs, () => abort(TIMEOUT));
  const context = execution.context(prepared, controller.signal);
  await hooks.notify("before_execute", call, entry);
  const run = () => entry.tool.execute(prepared.args, context);
  const running = (async (): Promise<ToolResult> => {
    try {
      if (hooks.hooks) {
        const wrapped = await hooks.hooks.wrap(hooks.context(call, entry), run);
        hooks.keep(wrapped.records);
        // A handler failure passed through unchanged is handled as if no hook were there.
        if (wrapped.status === "threw") throw wrapped.error;
        if (wrapped.status === "violation") {
          // When the handler never ran, nothing can have been applied.
          return errorResult(id, "HOOK_VIOLATION", wrapped.message, {
            data: { executed: wrapped.executed },
            ...(wrapped.executed ? {} : { operationApplied: false }),
          });
        }
        return okResult(id, wrapped.value, Date.now() - began);
      }
      return okResult(id, await run(), Date.now() - began);
    } catch (error) {
      return classifyFailure(id, error, controller.signal, Date.now() - began);
    }
  })();
  try {
    const result = await Promise.race([running, abandoned]);
    await hooks.notify("after_execute", call, entry, result.status);
    return result;
  } finally {
    // Whichever settled first, the grace period (if an abort started one) is over.
    if (grace !== undefined) clearTimeout(grace);
    cancelTimeout();
    runSignal.removeEventListener("abort", onRunAbort);
    callSignal?.removeEventListener("abort", onCallAbort);
  }
}

/** A thrown failure as a result; a fired signal decides between timeout and cancellation. */
function classifyFailure(id: CallIdentity, error: unknown, signal: AbortSignal, ms: number): ToolResult {
  if (
    signal.aborted &&
    !(error instanceof ToolError && (error.code === "TIMEOUT" || error.code === "CANCELLED"))
  ) {
    const timedOut = signal.reason === TIMEOUT;
    return errorResult(
      id,
      timedOut ? "TIMEOUT" : "CANCELLED",
      timedOut ? `${id.name} ran out of time.` : `${id.name} was cancelled.`,
      { durationMs: ms },
    );
  }
  // A handler that reports "cancelled" because the runtime's time budget fired timed out.
  if (signal.reason === TIMEOUT && error instanceof ToolError && error.code === "CANCELLED") {
    const data = error.data === undefined ? {} : { data: toJsonObject(error.data) };
    return errorResult(id, "TIMEOUT", `${id.name} ran out of time.`, { durationMs: ms, ...data });
  }
  return resultFromThrown(id, error, ms);
}

/**
 * The limits a runtime is given as the retry policy tool retries run under: bounded by attempts
 * alone (no total wait budget), equal jitter so a retry never comes at once.
 */
function toolRetryPolicy(limits: RetryLimits): RetryPolicy {
  return {
    maxAttempts: limits.maxAttempts,
    maxTotalWaitMs: Number.POSITIVE_INFINITY,
    baseMs: limits.baseDelayMs,
    maxMs: limits.maxDelayMs,
    jitter: "equal",
  };
}
