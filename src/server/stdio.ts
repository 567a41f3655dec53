import { ErrorCode, RpcError } from "../api/errors.js";
import { encodeLine, LineDecoder } from "../api/framing.js";
import type { SessionHub } from "./hub.js";
import { LOCAL_IDENTITY } from "./identities.js";
import { answer, type Connection, errorLine, type ServerInfo } from "./rpc.js";

/**
 * JSON-RPC over the process's stdin/stdout, one message per line: the local user's connection
 * (identity "local"). Logs go to stderr only. Requests are answered concurrently (a long
 * session/compact does not hold up an approval/respond); each response is one whole line.
 * Resolves when stdin closes.
 */
export function serveStdio(
  hub: SessionHub,
  info: ServerInfo,
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
): Promise<void> {
  const connection: Connection = {
    identity: LOCAL_IDENTITY,
    transport: "stdio",
    sink: (notification) =>
      output.write(encodeLine({ jsonrpc: "2.0", method: notification.method, params: notification.params })),
    subscriptions: new Map(),
  };
  const decoder = new LineDecoder();
  const handle = (lines: ReturnType<LineDecoder["push"]>) => {
    for (const line of lines) {
      void answer(hub, connection, info, line).then(
        (response) => {
          if (response !== undefined) output.write(response);
        },
        () => output.write(errorLine(null, new RpcError(ErrorCode.InternalError, "internal error"))),
      );
    }
  };
  return new Promise((resolve) => {
    input.on("data", (chunk: Buffer | string) => handle(decoder.push(chunk)));
    input.on("end", () => {
      handle(decoder.end());
      for (const unsubscribe of connection.subscriptions.values()) unsubscribe();
      resolve();
    });
    input.on("error", () => resolve());
  });
}
