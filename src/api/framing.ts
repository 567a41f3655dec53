/**
 * Line framing: one JSON value per line, `\n`-terminated. Lines are split on the byte 0x0A only,
 * so U+2028/U+2029 (which some JSON readers treat as line ends) stay inside their strings; a
 * trailing `\r` is dropped, blank lines are skipped. A line longer than the cap is reported once
 * and skipped to its end, after which the stream goes on: one bad line never ends a connection.
 */

export const MAX_LINE_BYTES = 16 * 1024 * 1024;

export type DecodedLine =
  | { ok: true; value: unknown }
  | { ok: false; error: "parse" | "too_long"; message: string };

const NEWLINE = 0x0a;
const BLANK = /^[ \t\r]*$/;

export class LineDecoder {
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** Inside a line already reported as too long: everything up to its newline is dropped. */
  #skipping = false;

  constructor(private readonly maxLineBytes: number = MAX_LINE_BYTES) {}

  /**
   * The values of the lines this chunk completes, in order. Each chunk is scanned once and the
   * pieces of a line are joined once, when its newline arrives (linear in the input).
   */
  push(chunk: Buffer | Uint8Array | string): DecodedLine[] {
    const bytes =
      typeof chunk === "string"
        ? Buffer.from(chunk, "utf8")
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const out: DecodedLine[] = [];
    let start = 0;
    for (
      let newline = bytes.indexOf(NEWLINE, start);
      newline !== -1;
      newline = bytes.indexOf(NEWLINE, start)
    ) {
      const piece = bytes.subarray(start, newline);
      start = newline + 1;
      if (this.#skipping) {
        this.#skipping = false;
        continue;
      }
      if (this.#pendingBytes + piece.length > this.maxLineBytes) {
        this.#reset();
        out.push(this.#tooLong());
        continue;
      }
      const line = this.#pending.length === 0 ? piece : Buffer.concat([...this.#pending, piece]);
      this.#reset();
      const decoded = decodeLine(line);
      if (decoded) out.push(decoded);
    }
    if (start < bytes.length && !this.#skipping) {
      const rest = bytes.subarray(start);
      if (this.#pendingBytes + rest.length > this.maxLineBytes) {
        this.#reset();
        this.#skipping = true;
        out.push(this.#tooLong());
      } else {
        // Copied: the caller may reuse its chunk's memory.
        this.#pending.push(Buffer.from(rest));
        this.#pendingBytes += rest.length;
      }
    }
    return out;
  }

  /** The end of the stream: a last line without its newline still counts. */
  end(): DecodedLine[] {
    const skipping = this.#skipping;
    this.#skipping = false;
    if (skipping || this.#pending.length === 0) {
      this.#reset();
      return [];
    }
    const line = Buffer.concat(this.#pending);
    this.#reset();
    const decoded = decodeLine(line);
    return decoded ? [decoded] : [];
  }

  #reset(): void {
    this.#pending = [];
    this.#pendingBytes = 0;
  }

  #tooLong(): DecodedLine {
    return { ok: false, error: "too_long", message: `a line longer than ${this.maxLineBytes} bytes` };
  }
}

function decodeLine(line: Buffer): DecodedLine | undefined {
  const text = line.toString("utf8");
  if (BLANK.test(text)) return undefined;
  const body = text.endsWith("\r") ? text.slice(0, -1) : text;
  try {
    return { ok: true, value: JSON.parse(body) };
  } catch (error) {
    return {
      ok: false,
      error: "parse",
      message: `the line is not JSON: ${(error as Error).message.slice(0, 200)}`,
    };
  }
}

/**
 * A value as one line. JSON.stringify leaves U+2028/U+2029 raw (they are legal in JSON strings),
 * but a reader that splits on every Unicode line end would cut the message there: they are
 * written escaped. Both can only occur inside strings, so replacing them is always safe.
 */
export function encodeLine(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError("encodeLine: the value has no JSON form");
  return `${text.replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029")}\n`;
}
