import { serveStdio } from "@modelcontextprotocol/server/stdio";
import { serveHttp } from "./http.js";
import { type McpServeOptions, mcpServerFactory } from "./server.js";

export interface ServeMcpOptions extends McpServeOptions {
  /** Streamable HTTP instead of stdio (the caller checked the host and read the token). */
  http?: { host: string; port: number; token: string };
  /** One line for the operator (stderr: on stdio, stdout is the protocol's). */
  log(line: string): void;
}

/**
 * Serve until the client goes away (stdio: stdin ends) or the process is told to stop; then
 * end the served session (its last reply has no calls) and close the transport.
 */
export async function serveMcp(options: ServeMcpOptions): Promise<number> {
  const factory = mcpServerFactory(options);
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  let signals = 0;
  const onSignal = () => {
    signals += 1;
    // A second signal does not wait for running calls: the engine stops at its next safe point.
    if (signals > 1) options.session.abort();
    stop();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const onError = (error: Error) => options.log(`transport error: ${error.message}`);
  let closeTransport: () => Promise<void>;
  if (options.http) {
    const serving = await serveHttp({ ...options.http, factory, onError });
    options.log(`listening on http://${formatHost(serving.host)}:${serving.port}/`);
    closeTransport = serving.close;
  } else {
    const handle = serveStdio(factory, { onerror: onError });
    process.stdin.once("end", stop);
    process.stdin.once("close", stop);
    closeTransport = () => handle.close();
  }
  try {
    await stopped;
    const summary = await options.session.close();
    options.log(`session ${options.session.sessionId} ended${summary ? ` (${summary.status})` : ""}`);
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
