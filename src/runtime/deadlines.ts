/**
 * Call timeouts on one timer. Each tool call has a deadline, and nearly every call finishes long
 * before it: arming and clearing a Node timer per call (a Timeout object, async-hook bookkeeping,
 * a timer-list insert and removal) cost more than the rest of a fast call's plumbing. Here a call
 * costs a set insert and delete; one timer, armed for the earliest deadline, fires the expired
 * ones and re-arms. The timer holds the process open only while a call is waiting, as a
 * per-call timer would.
 */

interface Waiting {
  at: number;
  fire(): void;
}

export class Deadlines {
  readonly #waiting = new Set<Waiting>();
  #timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires (ms, performance.now() clock). */
  #armedFor = Number.POSITIVE_INFINITY;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Run `fire` once `ms` have passed, unless the returned cancel runs first. */
  add(ms: number, fire: () => void): () => void {
    const entry: Waiting = { at: this.now() + ms, fire };
    this.#waiting.add(entry);
    if (this.#timer === undefined || entry.at < this.#armedFor) this.#arm(entry.at);
    else if (this.#waiting.size === 1) this.#timer.ref();
    return () => {
      if (this.#waiting.delete(entry) && this.#waiting.size === 0) this.#timer?.unref();
    };
  }

  #arm(at: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#armedFor = at;
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, at - this.now()));
  }

  #expire(): void {
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    const now = this.now();
    let next = Number.POSITIVE_INFINITY;
    const due: Waiting[] = [];
    for (const entry of this.#waiting) {
      if (entry.at <= now) due.push(entry);
      else if (entry.at < next) next = entry.at;
    }
    for (const entry of due) this.#waiting.delete(entry);
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next);
    for (const entry of due) entry.fire();
  }
}
