/**
 * Open event streams per identity, so a flood of them from one cannot starve the others. A slot
 * is taken with `take` and given back by calling what it returned: any number of calls give it
 * back once, so every path that ends a stream (the client leaving before it was set up, an error,
 * a drop, the end) may call it without counting twice or not at all.
 */
export class StreamSlots {
  readonly #held = new Map<string, number>();

  constructor(readonly perIdentity: number) {}

  /** A slot for `identity` and the function that gives it back, or undefined when it holds them all. */
  take(identity: string): (() => void) | undefined {
    const held = this.#held.get(identity) ?? 0;
    if (held >= this.perIdentity) return undefined;
    this.#held.set(identity, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = (this.#held.get(identity) ?? 1) - 1;
      if (now > 0) this.#held.set(identity, now);
      else this.#held.delete(identity);
    };
  }

  /** How many slots `identity` holds now. */
  held(identity: string): number {
    return this.#held.get(identity) ?? 0;
  }
}
