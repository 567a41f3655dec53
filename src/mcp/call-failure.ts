import { ToolError } from "../tools/errors.js";
import { McpCallError } from "./errors.js";
import { wellFormed } from "./results.js";

/*
 * How a call that did not come back becomes a ToolError. The connection reports whether the
 * request may have reached the server (`outcome`); that decides everything the model and the
 * session are told.
 */

/**
 * A failed call as a ToolError. Whether the request may have reached the server decides: never
 * sent is a plain failure; an error the server answered with is the tool's failure; a connection
 * lost in flight is an unknown outcome for a person to review, except for tools a trusted server
 * marks read-only or idempotent, which may be sent again.
 */
export function toolFailureOf(
  error: unknown,
  name: string,
  timeoutMs: number,
  safeToRepeat: boolean,
  readOnly: boolean,
): unknown {
  if (!(error instanceof McpCallError)) return error;
  const reason = wellFormed(error.message.slice(0, 300));
  const data = { kind: error.kind, outcome: error.outcome, reason };
  const notSent = error.outcome === "not_sent";
  if (error.kind === "timeout") {
    return new ToolError("TIMEOUT", `${name}: the MCP server did not answer within ${timeoutMs} ms.`, {
      data,
      ...(notSent ? { operationApplied: false } : {}),
    });
  }
  if (error.kind === "cancelled") {
    return new ToolError("CANCELLED", `${name} was cancelled.`, {
      data,
      ...(notSent ? { operationApplied: false } : {}),
    });
  }
  if (notSent) return new ToolError("MCP_UNAVAILABLE", `${name} was not sent: ${reason}`, { data });
  if (error.kind === "protocol") {
    // The server answered, with an error instead of a result: the connection is alive and nothing
    // is lost in flight, but what the server did before failing is its own affair.
    return new ToolError("TOOL_FAILED", `${name}: the MCP server answered with an error: ${reason}`, {
      data,
      operationApplied: readOnly ? false : "unknown",
    });
  }
  if (safeToRepeat) {
    return new ToolError(
      "MCP_CONNECTION_LOST",
      `${name}: the connection to the MCP server was lost: ${reason}`,
      {
        data,
        operationApplied: readOnly ? false : "unknown",
      },
    );
  }
  return new ToolError(
    "MCP_OUTCOME_UNKNOWN",
    `${name}: the connection to the MCP server was lost after the call was sent (${reason}); whether it took effect is unknown.`,
    { data },
  );
}
