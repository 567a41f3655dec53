/**
 * A record whose values are built on first read, each once: for tables of schemas (zod builds a
 * schema's whole object graph when it is declared, and a process uses few of a table's entries).
 * Keys, `Object.keys`, `in` and `Object.hasOwn` see every entry without building any; reading one
 * builds it and keeps it.
 */
export function lazyRecord<B extends Record<string, () => unknown>>(
  builders: B,
): { readonly [K in keyof B]: ReturnType<B[K]> } {
  const record = {} as { [K in keyof B]: ReturnType<B[K]> };
  for (const key of Object.keys(builders) as (keyof B & string)[]) {
    const build = builders[key]!;
    Object.defineProperty(record, key, {
      enumerable: true,
      configurable: true,
      get() {
        const value = build() as ReturnType<B[typeof key]>;
        Object.defineProperty(record, key, { value, enumerable: true, configurable: false, writable: false });
        return value;
      },
    });
  }
  return record;
}

/** A value built on first call, once. */
export function once<T>(build: () => T): () => T {
  let built: { value: T } | undefined;
  return () => {
    built ??= { value: build() };
    return built.value;
  };
}
