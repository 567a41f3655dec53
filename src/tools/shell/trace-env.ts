import type { ToolContext } from "../tool.js";

/*
 * W3C trace context for the processes a call starts: with a live OpenTelemetry export on, the
 * call's span (the exported `execute_tool` span's ids, derived from the journal) is handed on as
 * `TRACEPARENT`, so a traced program's own spans nest under the call. harness sets it itself
 * after the environment filter; a `TRACEPARENT` in harness's own environment never passes the
 * filter, so without an export a process sees none.
 */

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/;

/** `{ TRACEPARENT }` of the call, or undefined when no live export is on. */
export function traceEnvironment(
  context: Pick<ToolContext, "traceparent">,
): { TRACEPARENT: string } | undefined {
  const traceparent = context.traceparent?.();
  return traceparent !== undefined && TRACEPARENT.test(traceparent)
    ? { TRACEPARENT: traceparent }
    : undefined;
}
