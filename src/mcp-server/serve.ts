import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { ClientScope, type SessionOpener } from "./client-scope.js";
import { serveHttp } from "./http.js";
import { DEFAULT_SESSION_LIMITS, type SessionLimits } from "./http-limits.js";
import type { ServedSession } from "./served-session.js";
import { type McpServeOptions, mcpServerFactory } from "./server.js";

export interface ServeMcpOptions extends McpServeOptions {
  /**
   * Opens a served session (its journal under .harness/sessions). Called at a client's first
   * tool call, never at connection: a client that connects, lists and leaves (an IDE probing its
   * servers) leaves nothing behind. The stdio client has one; over HTTP each 2025-era client has
   * its own, and requests of the stateless generation (no client identity) share one.
   */
  openSession: SessionOpener;
  /** Streamable HTTP instead of stdio (the caller checked the host and read the token). */
  http?: {
    host: string;
    port: number;
    token: string;
    allowedHosts?: readonly string[];
    allowedOrigins?: readonly string[];
    limits?: SessionLimits;
  };
  /** One line for the operator (stderr: on stdio, stdout is the protocol's). */
  log(line: string): void;
}

/**
 * Serve until the client goes away (stdio: stdin ends) or the process is told to stop; then
 * end the served sessions that were opened (their last reply has no calls) and close the transport.
 */
export async function serveMcp(options: ServeMcpOptions): Promise<number> {
  const factory = mcpServerFactory(options);
  const opened = new Set<ServedSession>();
  const open = async (): Promise<ServedSession> => {
    try {
      const session = await options.openSession();
      opened.add(session);
      return session;
    } catch (error) {
      // The client's call is answered with the reason too (server.ts); the operator sees it here.
      options.log(`no session could be opened: ${error instanceof Error ? error.message : String(error)}`);
      throw error;
    }
  };
  const shared = ClientScope.lazy(async () => {
    const session = await open();
    options.log(`session ${session.sessionId} started`);
    return session;
  });
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  let signals = 0;
  const onSignal = () => {
    signals += 1;
    // A second signal does not wait for running calls: the engine stops at its next safe point.
    if (signals > 1) for (const session of opened) session.abort();
    stop();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const onError = (error: Error) => options.log(`transport error: ${error.message}`);
  let closeTransport: () => Promise<void>;
  if (options.http) {
    const { limits, ...http } = options.http;
    const serving = await serveHttp({
      ...http,
      limits: limits ?? DEFAULT_SESSION_LIMITS,
      stateless: () => factory(shared),
      session: () => {
        const scope = ClientScope.lazy(async () => {
          const session = await open();
          options.log(`a client session started session ${session.sessionId}`);
          return session;
        });
        return {
          server: factory(scope),
          close: async () => {
            const summary = await scope.close();
            const [id] = scope.started();
            if (id !== undefined) options.log(`session ${id} ended${summary ? ` (${summary.status})` : ""}`);
          },
        };
      },
      onError,
    });
    options.log(`listening on http://${formatHost(serving.host)}:${serving.port}/`);
    let closing: Promise<void> | undefined;
    closeTransport = () => {
      closing ??= serving.close();
      return closing;
    };
  } else {
    const handle = serveStdio(() => factory(shared), { onerror: onError });
    process.stdin.once("end", stop);
    process.stdin.once("close", stop);
    closeTransport = () => handle.close();
  }
  try {
    await stopped;
    // HTTP clients' own sessions end with the transport (their calls cancelled, see ClientScope).
    if (options.http) await closeTransport().catch(() => undefined);
    // The shared session's running calls finish (a second signal stops them at once).
    const summary = await shared.close({ cancelCalls: false });
    const [id] = shared.started();
    if (id !== undefined) options.log(`session ${id} ended${summary ? ` (${summary.status})` : ""}`);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await closeTransport().catch(() => undefined);
  }
  return 0;
}

function formatHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}
