import type { Notification } from "../api/index.js";

/**
 * Puts one session's notifications in journal order and drops the ones already delivered. A
 * replay and live delivery may overlap (a resumed stream, a subscription that starts while the
 * session runs) and may interleave; every durable record is one notification and seqs are
 * contiguous, so a notification above the next expected seq waits for the ones before it. Should
 * the server skip a seq, the wait ends after `gapMs` (or `maxWaiting` notifications) and delivery
 * goes on from the lowest waiting one: a missing event is never worth a stalled stream.
 */
export class SessionOrder {
  #next: number | undefined;
  #waiting = new Map<number, Notification>();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    fromSeq: number | undefined,
    private readonly deliver: (n: Notification) => void,
    private readonly gapMs = 500,
    private readonly maxWaiting = 1024,
  ) {
    this.#next = fromSeq;
  }

  /** The highest seq delivered so far (0 before any). */
  get lastSeq(): number {
    return this.#next === undefined ? 0 : this.#next - 1;
  }

  push(notification: Notification): void {
    if (!("seq" in notification.params)) {
      this.deliver(notification);
      return;
    }
    const seq = notification.params.seq;
    if (this.#next === undefined) this.#next = seq;
    if (seq < this.#next || this.#waiting.has(seq)) return;
    this.#waiting.set(seq, notification);
    this.#drain();
    if (this.#waiting.size >= this.maxWaiting) this.#skipGap();
    this.#arm();
  }

  /** While something waits for a gap to fill, a timer bounds the wait. */
  #arm(): void {
    if (this.#waiting.size === 0 || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#skipGap();
      this.#arm();
    }, this.gapMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#waiting.clear();
  }

  #drain(): void {
    for (
      let n = this.#waiting.get(this.#next ?? 0);
      n !== undefined;
      n = this.#waiting.get(this.#next ?? 0)
    ) {
      this.#waiting.delete(this.#next ?? 0);
      this.#next = (this.#next ?? 0) + 1;
      this.deliver(n);
    }
    if (this.#waiting.size === 0 && this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  #skipGap(): void {
    if (this.#waiting.size === 0) return;
    this.#next = Math.min(...this.#waiting.keys());
    this.#drain();
  }
}
