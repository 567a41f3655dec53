import { format } from "node:util";

/**
 * stdout is harness's own output: a `--json` summary, `--events` lines, the protocol of
 * `harness mcp serve --stdio`. Libraries harness runs (the MCP SDK among them) may print
 * diagnostics with `console.log`/`info`/`debug`, which Node writes to stdout, where one line would
 * break a consumer that reads exactly one JSON object. Every console method is sent to stderr.
 */
export function consoleToStderr(): void {
  const toStderr = (...values: unknown[]): void => {
    process.stderr.write(`${format(...values)}\n`);
  };
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
  console.trace = toStderr;
  console.dir = (value: unknown) => toStderr(value);
  console.table = (value: unknown) => toStderr(value);
}
