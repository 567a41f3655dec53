import { JournalError } from "./store.js";
import type { AnyRecord } from "./vocabulary.js";

/**
 * Records a writer keeps in memory at most, besides those it has staged: enough for the chain
 * (the last one) and for a caller looking at what was just appended; everything older is read
 * back from storage (`JournalWriter.readAll`). A long session's memory then stays flat: its
 * journal grows on disk, not in the process.
 */
export const RECENT_RECORDS = 64;

/**
 * What a journal writer holds of its session in memory: the count, the last record, a bounded
 * window of recent ones, the records loaded at open (until the first append: whoever opened the
 * writer folds them once, then they go), and the staged records not yet stored. One class, so
 * every store keeps the same bound.
 */
export class RecordWindow {
  #length: number;
  #recent: AnyRecord[];
  /** The records verified at open, handed out by `readAll` until the first append releases them. */
  #opened: AnyRecord[] | undefined;
  /** Appended with `durable: false` and not stored yet: storage cannot give them back. */
  #staged: AnyRecord[] = [];

  constructor(
    readonly sessionId: string,
    opened: AnyRecord[],
  ) {
    this.#length = opened.length;
    this.#recent = opened.slice(-RECENT_RECORDS);
    this.#opened = opened;
  }

  get length(): number {
    return this.#length;
  }

  get last(): AnyRecord | undefined {
    return this.#recent.at(-1);
  }

  get recent(): readonly AnyRecord[] {
    return this.#recent;
  }

  /** Records just chained: in the window, and staged until `stored` says they reached storage. */
  add(records: readonly AnyRecord[], staged: boolean): void {
    if (records.length === 0) return;
    this.#opened = undefined;
    this.#length += records.length;
    for (const record of records) this.#recent.push(record);
    if (this.#recent.length > 2 * RECENT_RECORDS) this.#recent = this.#recent.slice(-RECENT_RECORDS);
    if (staged) for (const record of records) this.#staged.push(record);
  }

  /** Everything staged was handed to storage (written, or lost with a failed write that stops the writer). */
  stored(): void {
    this.#staged = [];
  }

  /**
   * Every record, in order: the ones loaded at open while nothing was appended since, else what
   * `load` reads back from storage followed by what is staged. The stored part must end where
   * this writer's stored chain ends (its seq and hash), so a journal changed behind the writer
   * is refused rather than shown.
   */
  async readAll(load: () => Promise<AnyRecord[]> | AnyRecord[]): Promise<AnyRecord[]> {
    if (this.#opened !== undefined) return [...this.#opened];
    const staged = [...this.#staged];
    const stored = await load();
    const expected = this.#length - staged.length;
    const head = stored.at(-1);
    const before = staged[0] === undefined ? this.last : undefined;
    const matches =
      stored.length === expected &&
      (staged[0] !== undefined
        ? (head?.hash ?? null) === stagedPrev(staged[0])
        : head?.hash === before?.hash);
    if (!matches)
      throw new JournalError(
        "CORRUPT",
        `session ${this.sessionId}: the stored journal (${stored.length} records) is not the one this writer appended to (${expected}); reopen the session to verify it`,
      );
    return staged.length === 0 ? stored : [...stored, ...staged];
  }
}

/** The hash a staged record chains from (the genesis value for a first record). */
function stagedPrev(record: AnyRecord): string | null {
  return record.seq === 0 ? null : record.prev;
}
