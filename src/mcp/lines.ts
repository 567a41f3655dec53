/**
 * Splits a byte stream into newline-terminated lines, holding at most `maxLineBytes` of an
 * unfinished line. Each chunk is scanned once and the pieces of a long line are joined once, when
 * its newline arrives: a server streaming a huge line costs linear time, never quadratic.
 */
export class LineSplitter {
  #pending: Buffer[] = [];
  #pendingBytes = 0;

  constructor(private readonly maxLineBytes: number) {}

  /** The complete lines this chunk finishes (without "\n" or a trailing "\r"). Throws on a line over the limit. */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (let newline = chunk.indexOf(10, start); newline !== -1; newline = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, newline);
      this.#grow(piece.length);
      const line = this.#pending.length === 0 ? piece : Buffer.concat([...this.#pending, piece]);
      this.#pending = [];
      this.#pendingBytes = 0;
      lines.push(line.toString("utf8").replace(/\r$/, ""));
      start = newline + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.#grow(rest.length);
      this.#pending.push(rest);
    }
    return lines;
  }

  clear(): void {
    this.#pending = [];
    this.#pendingBytes = 0;
  }

  #grow(bytes: number): void {
    this.#pendingBytes += bytes;
    if (this.#pendingBytes > this.maxLineBytes) {
      this.clear();
      throw new Error(`a message longer than ${this.maxLineBytes} bytes`);
    }
  }
}
