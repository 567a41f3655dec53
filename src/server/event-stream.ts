import type { ServerResponse } from "node:http";
import { encodeLine } from "../api/framing.js";
import { TRANSIENT_NOTIFICATIONS } from "../api/notifications.js";
import type { Notification } from "./notifications.js";

/** How much one event stream may hold for a reader that does not keep up. */
export interface StreamLimits {
  /** Live events waiting behind a full socket; past this the stream is dropped. */
  maxQueuedBytes: number;
  /** A stream with bytes waiting whose socket took none of them for this long is dropped. */
  stallMs: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = { maxQueuedBytes: 8 * 1024 * 1024, stallMs: 60_000 };

/**
 * One Server-Sent Events stream of a session, written only as fast as its reader takes it.
 * The replay is pulled from its iterator one event at a time while the socket accepts them
 * (it costs no memory beyond the journal the replay reads); live events wait in a queue bounded
 * in bytes. A reader that lets the queue pass its bound, or takes no byte for `stallMs` while
 * some are waiting, is dropped: its connection is destroyed (what was buffered for it is freed)
 * and it resumes with Last-Event-ID, each durable event carrying its `id: SESSION:SEQ`.
 */
export class EventStreamWriter {
  readonly #res: ServerResponse;
  readonly #session: string;
  readonly #limits: StreamLimits;
  readonly #onDrop: (reason: string) => void;
  /** Live events not yet written, from `#head` on (an index: shifting a long array is quadratic). */
  #queue: { text: string; bytes: number }[] = [];
  #head = 0;
  #queuedBytes = 0;
  #replay: Iterator<Notification> | undefined;
  #started = false;
  #blocked = false;
  #closed = false;
  #stall: NodeJS.Timeout | undefined;
  #pendingAtCheck = 0;

  constructor(res: ServerResponse, session: string, limits: StreamLimits, onDrop: (reason: string) => void) {
    this.#res = res;
    this.#session = session;
    this.#limits = limits;
    this.#onDrop = onDrop;
  }

  /** A live notification (queued until the replay is sent). */
  push(notification: Notification, durable: boolean): void {
    this.#enqueue(this.#format(notification, durable));
  }

  /** A comment line that keeps proxies from closing an idle stream. */
  ping(): void {
    this.#enqueue(": ping\n\n");
  }

  /** Headers are sent: write the replay, then the live events, as the socket takes them. */
  start(replay: Iterator<Notification>): void {
    this.#started = true;
    this.#replay = replay;
    this.#pump();
  }

  /** The connection is gone: nothing more is written or kept. */
  close(): void {
    this.#closed = true;
    this.#replay = undefined;
    this.#queue = [];
    this.#head = 0;
    this.#queuedBytes = 0;
    clearInterval(this.#stall);
  }

  #enqueue(text: string): void {
    if (this.#closed) return;
    const bytes = Buffer.byteLength(text);
    this.#queue.push({ text, bytes });
    this.#queuedBytes += bytes;
    if (this.#queuedBytes > this.#limits.maxQueuedBytes) {
      this.#drop(`more than ${this.#limits.maxQueuedBytes} bytes of events waited for the reader`);
      return;
    }
    this.#pump();
  }

  #next(): string | undefined {
    if (this.#replay !== undefined) {
      const step = this.#replay.next();
      // A replay ends with the sub-agents' records (agent/record): sent, but without an id, as live.
      if (!step.done) return this.#format(step.value, !isTransient(step.value.method));
      this.#replay = undefined;
    }
    const item = this.#queue[this.#head];
    if (item === undefined) return undefined;
    this.#head += 1;
    this.#queuedBytes -= item.bytes;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    return item.text;
  }

  #pump(): void {
    if (!this.#started || this.#blocked || this.#closed) return;
    let accepted = true;
    while (accepted) {
      const text = this.#next();
      if (text === undefined) break;
      accepted = this.#res.write(text);
    }
    // http corks the socket until the next tick; a session whose steps resolve as promise
    // continuations can hold that tick off for many events, so send them now.
    this.#res.socket?.uncork();
    if (accepted) return;
    this.#blocked = true;
    this.#watchStall();
    this.#res.once("drain", () => {
      this.#blocked = false;
      clearInterval(this.#stall);
      this.#stall = undefined;
      this.#pump();
    });
  }

  /** While blocked: the bytes still waiting must go down between two checks, else the reader is gone. */
  #watchStall(): void {
    if (this.#stall !== undefined) return;
    this.#pendingAtCheck = this.#res.writableLength;
    this.#stall = setInterval(() => {
      const pending = this.#res.writableLength;
      if (pending > 0 && pending >= this.#pendingAtCheck)
        this.#drop(`the reader took no byte for ${this.#limits.stallMs} ms`);
      this.#pendingAtCheck = pending;
    }, this.#limits.stallMs);
    this.#stall.unref();
  }

  #drop(reason: string): void {
    if (this.#closed) return;
    this.close();
    this.#onDrop(reason);
    // Destroyed, not ended: an end would wait for the reader to take what is buffered.
    this.#res.destroy();
  }

  #format(notification: Notification, durable: boolean): string {
    const id = durable ? `id: ${this.#session}:${String(notification.params.seq)}\n` : "";
    return `${id}data: ${encodeLine({ jsonrpc: "2.0", method: notification.method, params: notification.params })}\n`;
  }
}

function isTransient(method: string): boolean {
  return (TRANSIENT_NOTIFICATIONS as readonly string[]).includes(method);
}
