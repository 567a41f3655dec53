/**
 * What a journal writer appended with `{ durable: false }` and has not stored yet: encoded,
 * chained and already among the writer's records, but invisible to readers (see
 * JournalWriter.append). Every store's writer keeps its staged records here, so the rule is
 * written once:
 * - staged items go to the store's durable write together with the next durable append's, in
 *   order and as one write (one fsync, one transaction);
 * - a durable append with nothing new stores what is staged, and writes nothing when nothing is;
 * - the items handed to a write leave the stage whether or not it succeeds: a failed write loses
 *   the staged tail as a crash would (what is stored is still a valid, shorter chain), and the
 *   writer, which saw the failure, stops;
 * - close stores what is staged, as best it can.
 * `T` is whatever the store writes: a batch's text (file), a stored line (memory), a record with
 * its line (PostgreSQL). `R` is what its write returns: a store that writes synchronously (file,
 * memory) stays synchronous, so an append never yields between writing and taking its records in.
 */
export class Staging<T, R extends void | Promise<void>> {
  #items: T[] = [];

  /** `writeDurably` gets every staged item, oldest first, and returns (or resolves) once they are durable. */
  constructor(private readonly writeDurably: (items: readonly T[]) => R) {}

  /** Stage `items` (in order); with `durable`, write everything staged, them included, now. */
  add(items: readonly T[], durable: boolean): R | undefined {
    for (const item of items) this.#items.push(item);
    return durable ? this.flush() : undefined;
  }

  /** Write everything staged in one durable write (nothing at all when nothing is staged). */
  flush(): R | undefined {
    if (this.#items.length === 0) return undefined;
    const items = this.#items;
    this.#items = [];
    return this.writeDurably(items);
  }

  /**
   * At close: write what is staged, ignoring a failure. An orderly close keeps staged records;
   * should that write fail they are lost as in a crash, which a resume handles, and the run has
   * already ended with its outcome. Synchronous for a synchronous store: a process that exits
   * right after starting a close (a second Ctrl-C) has still written and released everything.
   */
  flushAtClose(): R | undefined {
    try {
      const written = this.flush();
      return (written instanceof Promise ? written.catch(() => undefined) : written) as R | undefined;
    } catch {
      // see above
      return undefined;
    }
  }
}
