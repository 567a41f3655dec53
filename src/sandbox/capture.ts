import type { Readable } from "node:stream";
import type { ArtifactRef, ArtifactSink, ArtifactStore } from "../artifacts/store.js";
import type { ByteFilter } from "./scrub.js";

export interface CaptureLimits {
  /** Bytes kept from the start of the stream. */
  headBytes: number;
  /** Bytes kept from the end of the stream (beyond the head). */
  tailBytes: number;
  /** The most bytes stored as the stream's artifact (default MAX_STORED_OUTPUT_BYTES). */
  storedBytes?: number;
}

/**
 * A stream that passes this is not stored at all: at a few hundred MB/s a command printing for
 * the length of its timeout (`yes`) wrote tens of gigabytes into `.harness`, and a model can run
 * as many as it likes. Its head and tail are still kept and its size counted.
 */
export const MAX_STORED_OUTPUT_BYTES = 64 * 1024 * 1024;

export const DEFAULT_CAPTURE_LIMITS: CaptureLimits = { headBytes: 8 * 1024, tailBytes: 8 * 1024 };

/** What one output stream produced: counts, a bounded preview, and where the full bytes are. */
export interface StreamSummary {
  bytes: number;
  /** Newline-terminated lines, plus one for a final unterminated line. */
  lines: number;
  /** The preview omits bytes in the middle. */
  truncated: boolean;
  omittedBytes: number;
  /** The first bytes, decoded as UTF-8 (an incomplete trailing character dropped). */
  head: string;
  /** The last bytes after the head, decoded as UTF-8 (a partial leading character dropped). */
  tail: string;
  /** Every byte of the stream, or null when it was empty or could not be stored. */
  artifact: ArtifactRef | null;
  /** Why the artifact is missing although bytes were produced. */
  artifactError?: string;
}

/**
 * Consumes one output stream: keeps a head and a tail in memory and streams every byte into an
 * artifact (none past MAX_STORED_OUTPUT_BYTES), pulling the next chunk only after the previous one was written, so memory stays
 * bounded whatever the stream's size.
 */
export class OutputCapture {
  #bytes = 0;
  #newlines = 0;
  #lastByte = -1;
  #head: Buffer[] = [];
  #headLength = 0;
  #tail: Buffer = Buffer.alloc(0);
  #sink: ArtifactSink | undefined;
  #artifactError: string | undefined;

  /**
   * `filter` (secret scrubbing) sees every byte before the preview, the artifact and `watch` do;
   * `watch` sees the scrubbed bytes as they arrive (live output for people watching a command).
   */
  constructor(
    private readonly limits: CaptureLimits,
    private readonly artifacts: ArtifactStore | undefined,
    private readonly filter?: ByteFilter,
    private readonly watch?: (bytes: Buffer) => void,
  ) {}

  /** Read the stream to its end (or until it is destroyed). Never rejects. */
  async consume(stream: Readable): Promise<void> {
    try {
      for await (const chunk of stream) {
        const raw = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
        await this.#accept(this.filter === undefined ? raw : this.filter.write(raw));
      }
    } catch {
      // Destroyed after the process tree was killed (a pipe held by an escaped process): what
      // arrived so far is the output.
    }
    if (this.filter !== undefined) await this.#accept(this.filter.end());
  }

  async #accept(bytes: Buffer): Promise<void> {
    if (bytes.length === 0) return;
    this.#take(bytes);
    this.watch?.(bytes);
    await this.#store(bytes);
  }

  /** Seal the artifact and describe the stream. Call once, after consume settled. */
  async finish(): Promise<StreamSummary> {
    let artifact: ArtifactRef | null = null;
    if (this.#sink !== undefined) {
      try {
        artifact = await this.#sink.finish();
      } catch (error) {
        this.#fail(error);
        await this.#sink.abort().catch(() => undefined);
      }
    }
    const head = Buffer.concat(this.#head);
    const omittedBytes = this.#bytes - head.length - this.#tail.length;
    const summary: StreamSummary = {
      bytes: this.#bytes,
      lines: this.#newlines + (this.#bytes > 0 && this.#lastByte !== 0x0a ? 1 : 0),
      truncated: omittedBytes > 0,
      omittedBytes,
      ...decodePreview(head, this.#tail, omittedBytes > 0),
      artifact,
    };
    if (this.#artifactError !== undefined) summary.artifactError = this.#artifactError;
    return summary;
  }

  /** Drop a partial artifact (the run is being abandoned). */
  async abort(): Promise<void> {
    await this.#sink?.abort().catch(() => undefined);
    this.#sink = undefined;
  }

  #take(chunk: Buffer): void {
    this.#bytes += chunk.length;
    for (let at = chunk.indexOf(0x0a); at >= 0; at = chunk.indexOf(0x0a, at + 1)) this.#newlines++;
    if (chunk.length > 0) this.#lastByte = chunk[chunk.length - 1]!;
    let rest = chunk;
    const headRoom = this.limits.headBytes - this.#headLength;
    if (headRoom > 0) {
      const part = Buffer.from(rest.subarray(0, headRoom));
      this.#head.push(part);
      this.#headLength += part.length;
      rest = rest.subarray(part.length);
    }
    if (rest.length === 0) return;
    const keep = this.limits.tailBytes;
    if (rest.length >= keep) {
      this.#tail = Buffer.from(rest.subarray(rest.length - keep));
    } else {
      const joined = Buffer.concat([this.#tail, rest]);
      this.#tail = Buffer.from(joined.subarray(Math.max(0, joined.length - keep)));
    }
  }

  async #store(chunk: Buffer): Promise<void> {
    if (this.artifacts === undefined || this.#artifactError !== undefined) return;
    const limit = this.limits.storedBytes ?? MAX_STORED_OUTPUT_BYTES;
    if (this.#bytes > limit) {
      this.#artifactError = `the output passed ${limit} bytes and was not stored; only its head and tail are kept`;
      await this.abort();
      return;
    }
    try {
      this.#sink ??= await this.artifacts.open();
      await this.#sink.write(chunk);
    } catch (error) {
      this.#fail(error);
      await this.abort();
    }
  }

  #fail(error: unknown): void {
    // Artifact stores report host paths in their errors; keep only the error code.
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    this.#artifactError = `the output could not be stored${typeof code === "string" ? ` (${code})` : ""}`;
  }
}

function decodePreview(head: Buffer, tail: Buffer, gap: boolean): { head: string; tail: string } {
  if (!gap) return { head: new TextDecoder().decode(Buffer.concat([head, tail])), tail: "" };
  // `stream: true` holds back an incomplete final character instead of emitting U+FFFD.
  const headText = new TextDecoder().decode(head, { stream: true });
  let start = 0;
  while (start < Math.min(3, tail.length) && (tail[start]! & 0xc0) === 0x80) start++;
  return { head: headText, tail: new TextDecoder().decode(tail.subarray(start)) };
}
