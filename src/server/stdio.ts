import type { SessionHub } from "./hub.js";
import { LOCAL_IDENTITY } from "./identities.js";
import { answer, type Connection, type ServerInfo } from "./rpc.js";
import { errorMessage, LineSplitter, notificationMessage, RPC, RpcError } from "./wire.js";

/**
 * JSON-RPC over the process's stdin/stdout, one message per line: the local user's connection
 * (identity "local"). Logs go to stderr only. Requests are answered concurrently (a long
 * session/compact does not hold up an approval/respond); each response is one whole line.
 * Ends when stdin closes; the sessions keep running until the server shuts down.
 */
export function serveStdio(
  hub: SessionHub,
  info: ServerInfo,
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
): Promise<void> {
  const write = (line: string) => {
    output.write(`${line}\n`);
  };
  const connection: Connection = {
    identity: LOCAL_IDENTITY,
    transport: "stdio",
    sink: (notification) => write(notificationMessage(notification.method, notification.params)),
    subscriptions: new Map(),
  };
  const splitter = new LineSplitter(
    (line) => {
      void answer(hub, connection, info, line).then((response) => {
        if (response !== undefined) write(response);
      });
    },
    () => write(errorMessage(null, new RpcError(RPC.INVALID_REQUEST, "line too long (over 16 MiB)"))),
  );
  return new Promise((resolve) => {
    input.on("data", (chunk: Buffer | string) =>
      splitter.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk),
    );
    input.on("end", () => {
      for (const unsubscribe of connection.subscriptions.values()) unsubscribe();
      resolve();
    });
    input.on("error", () => resolve());
  });
}
