import type { AnyRecord } from "../journal/vocabulary.js";
import { type Notification, NotificationFold, type SessionStatus } from "./notifications.js";
import type { SessionStore } from "./ports.js";
import { messageOf } from "./stored.js";

/** How often a followed journal is looked at: a stat each time, a read only when it changed. */
export const FOLLOW_POLL_MS = 500;

/**
 * A session this server does not host, followed while someone watches it: another process (a
 * `harness run`, `chat`, a worker) may be appending to its journal. Every `FOLLOW_POLL_MS` the
 * store's stamp (the journal file's size and times, its lock's presence) is compared; only when
 * it changed is the journal read again (verified, as every read is), and each record past the last
 * one handed on becomes its notification, through the same fold as a hosted session's. One timer
 * per followed session, never two ticks at once, unref'd: it never keeps the server alive.
 */
export class StoredFollower {
  readonly #fold: NotificationFold;
  #status: SessionStatus;
  #stamp: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #failed: string | undefined;

  constructor(
    private readonly session: string,
    private readonly store: SessionStore,
    records: readonly AnyRecord[],
    private readonly emit: (notification: Notification, durable: boolean) => void,
    private readonly log: (line: string) => void,
    private readonly intervalMs = FOLLOW_POLL_MS,
  ) {
    this.#fold = new NotificationFold(session);
    for (const record of records) this.#fold.next(record);
    this.#status = this.#fold.ended ?? "idle";
  }

  /** The seq of the last record handed on (-1 before any). */
  get lastSeq(): number {
    return this.#fold.lastSeq;
  }

  /** The first poll reads the journal whatever its stamp: it may have grown since `records` were read. */
  async start(): Promise<void> {
    await this.#refreshStatus();
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.#tick().finally(() => this.#schedule()), this.intervalMs);
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    const stamp = await this.store.stamp?.(this.session).catch(() => undefined);
    if (stamp !== undefined && stamp === this.#stamp) return;
    let records: AnyRecord[];
    try {
      records = await this.store.store.read(this.session);
    } catch (error) {
      // Logged once per distinct failure (a torn tail mid-write reads fine on the next change).
      const message = messageOf(error);
      if (message !== this.#failed) this.log(`following session ${this.session}: ${message}`);
      this.#failed = message;
      return;
    }
    this.#failed = undefined;
    this.#stamp = stamp;
    for (const record of records) {
      if (this.#stopped) return;
      if (record.seq <= this.#fold.lastSeq) continue;
      this.emit(this.#fold.next(record), true);
    }
    await this.#refreshStatus();
  }

  /** The status another process's run shows: running while it holds the lock and no turn ended. */
  async #refreshStatus(): Promise<void> {
    const holder = await this.store.lockHolder?.(this.session).catch(() => undefined);
    const status: SessionStatus = this.#fold.ended ?? (holder !== undefined ? "running" : "idle");
    if (status === this.#status || this.#stopped) return;
    this.#status = status;
    this.emit({ method: "session/status", params: { session: this.session, status } }, false);
  }
}
