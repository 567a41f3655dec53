/**
 * Human output that fits the terminal: a line longer than the width is cut with an ellipsis
 * rather than left for the terminal to wrap, which would break up a table. Machine output
 * (--json, --events) never goes through here.
 */

import { truncateToWidth } from "../shared/text-width.js";

/**
 * The columns to fit: the terminal's when the stream is one, else COLUMNS, else no limit
 * (a pipe or a file takes whole lines).
 */
export function outputWidth(
  stream: NodeJS.WriteStream,
  env: NodeJS.ProcessEnv = process.env,
): number | undefined {
  if (stream.isTTY === true && typeof stream.columns === "number" && stream.columns > 0)
    return stream.columns;
  const columns = env.COLUMNS === undefined ? Number.NaN : Number(env.COLUMNS);
  return Number.isInteger(columns) && columns > 0 ? columns : undefined;
}

/**
 * One line cut to `width` columns (shared/text-width.ts: wide CJK characters and emoji take two,
 * colour codes none), the last one an ellipsis.
 */
export function fitLine(line: string, width: number | undefined): string {
  return width === undefined ? line : truncateToWidth(line, width);
}

/** Every line of `text` fitted to `width`. */
export function fitText(text: string, width: number | undefined): string {
  if (width === undefined) return text;
  return text
    .split("\n")
    .map((line) => fitLine(line, width))
    .join("\n");
}
