/**
 * Human output that fits the terminal: a line longer than the width is cut with an ellipsis
 * rather than left for the terminal to wrap, which would break up a table. Machine output
 * (--json, --events) never goes through here.
 */

/** Colour codes (SGR) take no columns: they are kept, not counted. */
const SGR = /\u001b\[[0-9;]*m/y;
const ELLIPSIS = "…";
const RESET = "\u001b[0m";

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

/** One line cut to `width` characters (colour codes not counted), the last one an ellipsis. */
export function fitLine(line: string, width: number | undefined): string {
  if (width === undefined || visibleLength(line) <= width) return line;
  let out = "";
  let shown = 0;
  let coloured = false;
  let index = 0;
  while (index < line.length && shown < width - 1) {
    SGR.lastIndex = index;
    const code = SGR.exec(line);
    if (code) {
      out += code[0];
      coloured = true;
      index = SGR.lastIndex;
      continue;
    }
    const char = String.fromCodePoint(line.codePointAt(index) ?? 0);
    out += char;
    index += char.length;
    shown += 1;
  }
  return `${out}${ELLIPSIS}${coloured ? RESET : ""}`;
}

/** Every line of `text` fitted to `width`. */
export function fitText(text: string, width: number | undefined): string {
  if (width === undefined) return text;
  return text
    .split("\n")
    .map((line) => fitLine(line, width))
    .join("\n");
}

function visibleLength(line: string): number {
  return [...line.replace(/\u001b\[[0-9;]*m/g, "")].length;
}
