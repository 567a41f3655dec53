/**
 * A push-to-pull queue: a transport pushes what arrives, the caller's `for await` pulls it.
 * `fail` makes the pending and the next pull throw; `end` finishes the iteration once the queue
 * is drained. Unbounded on purpose: a slow consumer must not lose events (the server sends each
 * durable event once per subscription).
 */
export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  #items: T[] = [];
  #waiting: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  #done = false;
  #error: unknown;
  #failed = false;
  readonly #onReturn: (() => void) | undefined;

  constructor(onReturn?: () => void) {
    this.#onReturn = onReturn;
  }

  push(item: T): void {
    if (this.#done || this.#failed) return;
    const waiting = this.#waiting;
    if (waiting) {
      this.#waiting = undefined;
      waiting.resolve({ value: item, done: false });
    } else {
      this.#items.push(item);
    }
  }

  end(): void {
    if (this.#done) return;
    this.#done = true;
    this.#settle();
  }

  fail(error: unknown): void {
    if (this.#done || this.#failed) return;
    this.#failed = true;
    this.#error = error;
    this.#settle();
  }

  #settle(): void {
    const waiting = this.#waiting;
    if (!waiting || this.#items.length > 0) return;
    this.#waiting = undefined;
    if (this.#failed) waiting.reject(this.#error);
    else waiting.resolve({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<T>> {
    const item = this.#items.shift();
    if (item !== undefined) return Promise.resolve({ value: item, done: false });
    if (this.#failed) return Promise.reject(this.#error);
    if (this.#done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  return(): Promise<IteratorResult<T>> {
    this.#items = [];
    this.end();
    this.#onReturn?.();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
