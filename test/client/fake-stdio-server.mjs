// A stand-in for `harness serve --stdio` in the client's tests: answers initialize, session/start
// and shutdown (then exits); "crash" in a goal makes it write to stderr and exit 3.
import { createInterface } from "node:readline";

const send = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const request = JSON.parse(line);
  const { id, method, params } = request;
  if (method === "initialize") {
    send({
      jsonrpc: "2.0",
      id,
      result: {
        protocol_version: 1,
        server: { name: "harness", version: "fake" },
        identity: "local",
        capabilities: { compact: true, http: false },
      },
    });
  } else if (method === "session/start") {
    if (params.goal === "crash") {
      process.stderr.write("fake server: crashed on purpose\n");
      process.exit(3);
    }
    send({ jsonrpc: "2.0", id, result: { session: "s-1", status: "running" } });
  } else if (method === "shutdown") {
    send({ jsonrpc: "2.0", id, result: {} });
    process.stdout.write("", () => process.exit(0));
  } else {
    send({ jsonrpc: "2.0", id, error: { code: -32601, message: `method not found: ${method}` } });
  }
});
lines.on("close", () => process.exit(0));
