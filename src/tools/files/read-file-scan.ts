import { isUtf8 } from "node:buffer";
import { createHash } from "node:crypto";
import { firstInvalidUtf8Offset } from "./common.js";

/**
 * read_file's one pass over a file's chunks: the version (SHA-256 of every byte, hashed as the
 * chunks arrive), strict UTF-8 validity across chunk boundaries, the line count, whether CRLF
 * occurs, and the bytes of the requested lines only. Memory stays within one chunk plus the lines
 * kept, whatever the file's size.
 */

export interface ScanRequest {
  /** 1-based number of the first line to keep. */
  offset: number;
  /** How many lines to keep at most. */
  limit: number;
  /** Once this many bytes of kept lines are decoded, no later line is kept. */
  budgetBytes: number;
  /** Most bytes kept of one line (it is cut when shown anyway). */
  lineCapBytes: number;
}

export interface FileScan {
  version: string;
  /** Lines as text split on LF, without a last empty line. */
  total: number;
  /** The kept lines, decoded, in order from `offset`. */
  lines: string[];
  crlf: boolean;
  /** Byte offset of the first byte not part of well-formed UTF-8, or -1 when the file is valid. */
  invalidUtf8At: number;
}

const LF = 0x0a;
const CR = 0x0d;

/** Bytes of the UTF-8 sequence a byte starts; 1 for ASCII and for bytes that start none (invalid). */
function sequenceLength(lead: number): number {
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 1;
}

/** Where the last, unfinished sequence of `bytes` starts (bytes.length when none is unfinished). */
function completeEnd(bytes: Uint8Array): number {
  for (let i = bytes.length - 1; i >= Math.max(0, bytes.length - 3); i--) {
    const byte = bytes[i] as number;
    if ((byte & 0xc0) === 0x80) continue;
    return sequenceLength(byte) > bytes.length - i ? i : bytes.length;
  }
  return bytes.length;
}

/** Strict UTF-8 over a stream: chunk boundaries may fall inside a character. */
class Utf8Check {
  /** The start of a character the previous chunk ended inside (at most 3 bytes). */
  private carry: Uint8Array = new Uint8Array(0);
  /** Stream offset of the first byte not yet validated (the carry's first byte). */
  private position = 0;
  invalidAt = -1;

  push(chunk: Uint8Array): void {
    if (this.invalidAt !== -1) return;
    let rest = chunk;
    if (this.carry.length > 0) {
      const need = sequenceLength(this.carry[0] as number) - this.carry.length;
      const piece = Buffer.concat([this.carry, chunk.subarray(0, need)]);
      if (piece.length < this.carry.length + need) {
        this.carry = piece;
        return;
      }
      if (!this.valid(piece)) return;
      rest = chunk.subarray(need);
    }
    const end = completeEnd(rest);
    if (!this.valid(rest.subarray(0, end))) return;
    this.carry = rest.slice(end);
  }

  /** Call after the last chunk: a character cut off by the end is invalid. */
  finish(): number {
    if (this.invalidAt === -1 && this.carry.length > 0) this.invalidAt = this.position;
    return this.invalidAt;
  }

  private valid(bytes: Uint8Array): boolean {
    if (!isUtf8(bytes)) {
      this.invalidAt = this.position + firstInvalidUtf8Offset(bytes);
      return false;
    }
    this.position += bytes.length;
    return true;
  }
}

/** The lines kept from a stream of chunks, and the count of all of them. */
class LineWindow {
  total = 0;
  readonly lines: string[] = [];
  /** Whether the line being read has begun (a line exists once it has a byte or its LF). */
  private open = false;
  private keeping = false;
  /** Bytes kept of a line that began in an earlier chunk, copied: a chunk's memory is reused. */
  private pieces: Buffer[] = [];
  private kept = 0;
  private decoded = 0;

  constructor(private readonly request: ScanRequest) {}

  push(chunk: Uint8Array): void {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    while (start < bytes.length) {
      const newline = bytes.indexOf(LF, start);
      const end = newline === -1 ? bytes.length : newline;
      if (!this.open) this.begin();
      let upTo = start;
      if (this.keeping) {
        upTo = Math.min(end, start + Math.max(0, this.request.lineCapBytes - this.kept));
        this.kept += upTo - start;
      }
      if (newline === -1) {
        if (upTo > start) this.pieces.push(Buffer.from(bytes.subarray(start, upTo)));
        return;
      }
      if (this.keeping) {
        // A line within one chunk (the usual case) is decoded straight from it.
        this.keep(
          this.pieces.length === 0
            ? bytes.toString("utf8", start, upTo)
            : Buffer.concat([...this.pieces, bytes.subarray(start, upTo)]).toString("utf8"),
        );
      }
      this.open = false;
      start = newline + 1;
    }
  }

  finish(): void {
    if (!this.open) return;
    this.open = false;
    if (this.keeping) this.keep(Buffer.concat(this.pieces).toString("utf8"));
  }

  private begin(): void {
    this.open = true;
    this.total += 1;
    const { offset, limit, budgetBytes } = this.request;
    this.keeping = this.total >= offset && this.total < offset + limit && this.decoded <= budgetBytes;
  }

  private keep(text: string): void {
    this.lines.push(text);
    this.decoded += this.kept + 1;
    this.pieces = [];
    this.kept = 0;
  }
}

/**
 * Scan a file's chunks once. `onChunk` runs before each chunk is used, with the bytes read so far
 * that chunk included; it may throw to stop the scan (cancellation, a size limit).
 */
export async function scanFile(
  chunks: AsyncIterable<Uint8Array>,
  request: ScanRequest,
  onChunk: (bytesRead: number) => void = () => undefined,
): Promise<FileScan> {
  const hash = createHash("sha256");
  const utf8 = new Utf8Check();
  const window = new LineWindow(request);
  let crlf = false;
  let endsWithCr = false;
  let bytesRead = 0;
  for await (const chunk of chunks) {
    bytesRead += chunk.length;
    onChunk(bytesRead);
    hash.update(chunk);
    utf8.push(chunk);
    window.push(chunk);
    if (!crlf) {
      crlf =
        (endsWithCr && chunk[0] === LF) ||
        Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length).includes("\r\n");
    }
    endsWithCr = chunk[chunk.length - 1] === CR;
  }
  window.finish();
  return {
    version: hash.digest("hex"),
    total: window.total,
    lines: window.lines,
    crlf,
    invalidUtf8At: utf8.finish(),
  };
}
