import { SdkError, SdkErrorCode } from "@modelcontextprotocol/client";
import type { StreamSummary } from "../sandbox/capture.js";
import { CodedError } from "../shared/coded-error.js";
import { streamEndedUnanswered } from "./http-transport.js";

/**
 * Why a call to an MCP server produced no result:
 * - `disconnected`: the server exited or the connection dropped while the call was in flight;
 * - `timeout`: no answer within the tool timeout (the server was told to cancel);
 * - `cancelled`: the caller's signal fired (the server was told to cancel);
 * - `not_connected`: there was no connection to send it on (and one reconnect attempt failed);
 * - `protocol`: the server answered with a JSON-RPC error or a result that is not a CallToolResult.
 */
export type McpCallErrorKind = "disconnected" | "timeout" | "cancelled" | "not_connected" | "protocol";

/** `not_sent`: the server never saw the request. `unknown`: it may have, and may have acted on it. */
export type McpCallOutcome = "not_sent" | "unknown";

export class McpCallError extends CodedError<McpCallErrorKind> {
  override readonly name = "McpCallError";
  constructor(
    readonly kind: McpCallErrorKind,
    readonly outcome: McpCallOutcome,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(kind, message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/**
 * `spawn`: the process or transport could not be made; `handshake`: initialize failed; `timeout`:
 * startup_timeout_ms passed; `approval`: the check made before every start refused it (nothing ran);
 * `offline`: a package runner (`npx -y pkg`) could not download its package (offline-start.ts).
 */
export type McpStartFailure = "spawn" | "handshake" | "timeout" | "approval" | "offline";

/** A server that could not be started; whatever was started has been stopped. */
export class McpStartError extends CodedError<McpStartFailure> {
  override readonly name = "McpStartError";
  constructor(
    readonly server: string,
    readonly failure: McpStartFailure,
    message: string,
    /** The server's stderr (bounded, secrets scrubbed), when it was a process that wrote some. */
    readonly stderr: StreamSummary | undefined,
    options?: { cause?: unknown },
  ) {
    super(failure, message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/** How much of the server's stderr a start error's message quotes. */
const STDERR_QUOTE_CHARS = 600;

export function startFailure(
  server: string,
  failure: McpStartFailure,
  error: unknown,
  stderr: StreamSummary | undefined,
): McpStartError {
  const reason = error instanceof Error ? error.message : String(error);
  const what =
    failure === "offline"
      ? `could not start: ${reason}`
      : failure === "timeout"
        ? "did not complete the MCP handshake within startup_timeout_ms"
        : failure === "spawn"
          ? `could not be started: ${reason}`
          : `failed during the MCP handshake: ${reason}`;
  const said = stderrText(stderr);
  // The server's own words go on lines of their own under a `│ ` mark, every one of them, so no
  // line it wrote can pass for one of harness's when the message is shown.
  const quoted =
    said === ""
      ? ""
      : `; its stderr ends with:\n${said
          .split("\n")
          .map((line) => `  │ ${line}`)
          .join("\n")}`;
  const message = `MCP server "${server}" ${what}${quoted}`;
  return new McpStartError(server, failure, message, stderr, { cause: error });
}

function stderrText(stderr: StreamSummary | undefined): string {
  if (stderr === undefined) return "";
  const text = `${stderr.head}${stderr.truncated ? "\n…\n" : ""}${stderr.tail}`.trim();
  return text.length <= STDERR_QUOTE_CHARS ? text : `…${text.slice(-STDERR_QUOTE_CHARS)}`;
}

/** What a call's rejection means for the caller: the kind of failure and whether the server may have acted. */
export function callFailure(server: string, error: unknown, signal: AbortSignal | undefined): McpCallError {
  if (error instanceof McpCallError) return error;
  // The SDK's own refusal to send on a transport that just closed, or a remote server that
  // refused the connection: the request never left harness.
  if (
    (error instanceof Error && !(error instanceof SdkError) && error.message === "Not connected") ||
    refused(error) ||
    brokenPipe(error)
  ) {
    return new McpCallError("not_connected", "not_sent", `MCP server "${server}" is not connected`, {
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  if (signal?.aborted)
    return new McpCallError("cancelled", "unknown", "the call was cancelled", { cause: error });
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) {
    return new McpCallError("timeout", "unknown", `no answer within the tool timeout (${message})`, {
      cause: error,
    });
  }
  if (
    (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed) ||
    streamEndedUnanswered(error)
  ) {
    return new McpCallError(
      "disconnected",
      "unknown",
      `MCP server "${server}" disconnected during the call`,
      { cause: error },
    );
  }
  return new McpCallError("protocol", "unknown", message, { cause: error });
}

/** How a server process ended, for a start error. */
export function exitText(exit: { code: number | null; signal: NodeJS.Signals | null }): string {
  return exit.signal !== null
    ? `the process was killed by ${exit.signal}`
    : `the process exited with code ${exit.code}`;
}

/** A request whose TCP connection was refused: it cannot have reached the server. */
function refused(error: unknown): boolean {
  const cause = error instanceof Error ? (error as { cause?: unknown }).cause : undefined;
  return typeof cause === "object" && cause !== null && (cause as { code?: unknown }).code === "ECONNREFUSED";
}

/**
 * Writing the request to a stdio server that already exited: nothing reads the pipe any more, so
 * the server cannot act on the request (a process that died cannot, and a request cut short is
 * not a line it could parse).
 */
function brokenPipe(error: unknown): boolean {
  const code = (value: unknown) =>
    typeof value === "object" && value !== null ? (value as { code?: unknown }).code : undefined;
  return (
    code(error) === "EPIPE" ||
    (error instanceof Error && code((error as { cause?: unknown }).cause) === "EPIPE")
  );
}
