import { CodedError } from "../shared/coded-error.js";
import type { McpConnection } from "./connection.js";
import { McpStartError, startFailure } from "./errors.js";

/**
 * Starting a session's servers: all at once (a slow server does not delay the others), each
 * bounded by its own startup timeout, progress reported per server. An optional server that
 * fails is reported and left out; a required one stops the run before any model request.
 */

export type ServerStartProgress =
  | { server: string; phase: "starting" }
  | { server: string; phase: "ready"; durationMs: number }
  | { server: string; phase: "failed"; durationMs: number; required: boolean; error: McpStartError };

export type ServerStartOutcome =
  | { server: string; ok: true; durationMs: number }
  | { server: string; ok: false; durationMs: number; required: boolean; error: McpStartError };

/** Required servers that could not start; every server of the session was stopped. */
export class McpRequiredServerError extends CodedError<"MCP_REQUIRED_SERVER_FAILED"> {
  override readonly name = "McpRequiredServerError";
  constructor(readonly failures: readonly McpStartError[]) {
    const lines = failures.map((failure) => `- ${failure.message}`);
    super(
      "MCP_REQUIRED_SERVER_FAILED",
      `${failures.length === 1 ? "a required MCP server" : "required MCP servers"} could not start:\n${lines.join("\n")}\n` +
        'Fix the definition under "mcp_servers" in your config, or set "required": false to run without it.',
    );
  }
}

/**
 * Start every connection concurrently. Resolves with one outcome per connection, in the order
 * given, once all have settled; rejects with McpRequiredServerError (after closing every
 * connection) when a required server failed.
 */
export async function startServers(
  connections: readonly McpConnection[],
  onProgress?: (progress: ServerStartProgress) => void,
): Promise<ServerStartOutcome[]> {
  const outcomes = await Promise.all(
    connections.map(async (connection): Promise<ServerStartOutcome> => {
      const server = connection.name;
      const began = performance.now();
      onProgress?.({ server, phase: "starting" });
      try {
        await connection.start();
        const durationMs = Math.round(performance.now() - began);
        onProgress?.({ server, phase: "ready", durationMs });
        return { server, ok: true, durationMs };
      } catch (caught) {
        const error =
          caught instanceof McpStartError ? caught : startFailure(server, "spawn", caught, undefined);
        const durationMs = Math.round(performance.now() - began);
        const required = connection.definition.required;
        onProgress?.({ server, phase: "failed", durationMs, required, error });
        return { server, ok: false, durationMs, required, error };
      }
    }),
  );
  const requiredFailures = outcomes.flatMap((outcome) =>
    !outcome.ok && outcome.required ? [outcome.error] : [],
  );
  if (requiredFailures.length > 0) {
    await Promise.all(connections.map((connection) => connection.close()));
    throw new McpRequiredServerError(requiredFailures);
  }
  return outcomes;
}
