/**
 * A background process's recent output, both streams interleaved as they arrived: the last
 * `capacity` bytes, and a cursor that counts every byte ever seen. A reader that asks from a
 * cursor gets what is still held after it, and learns how many bytes it missed when the ring
 * moved past them (the full output is in the process's artifacts once it stops).
 */
export class OutputRing {
  #buffer: Buffer = Buffer.alloc(0);
  /** Bytes seen in total: the cursor after the newest byte. */
  #total = 0;

  constructor(readonly capacity: number) {}

  get total(): number {
    return this.#total;
  }

  write(bytes: Buffer): void {
    this.#total += bytes.length;
    const joined = bytes.length >= this.capacity ? bytes : Buffer.concat([this.#buffer, bytes]);
    this.#buffer = Buffer.from(joined.subarray(Math.max(0, joined.length - this.capacity)));
  }

  /**
   * Up to `limit` bytes from cursor `since` (default: the oldest held), decoded as UTF-8. `next`
   * is the cursor to ask from next time; `missed` the bytes that were no longer held.
   */
  read(since: number | undefined, limit: number): { text: string; next: number; missed: number } {
    const oldest = this.#total - this.#buffer.length;
    const from = Math.min(Math.max(since ?? oldest, oldest), this.#total);
    const missed = since !== undefined && since < oldest ? oldest - since : 0;
    const end = Math.min(this.#total, from + limit);
    const slice = this.#buffer.subarray(from - oldest, end - oldest);
    return { text: new TextDecoder().decode(slice), next: end, missed };
  }

  /** The last `bytes` bytes as text (for a failure's output tail). */
  tail(bytes: number): string {
    const start = Math.max(0, this.#buffer.length - bytes);
    let at = start;
    // Do not start in the middle of a UTF-8 character.
    while (at < this.#buffer.length && at - start < 3 && (this.#buffer[at]! & 0xc0) === 0x80) at++;
    return new TextDecoder().decode(this.#buffer.subarray(at));
  }
}
