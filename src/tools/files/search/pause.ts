/**
 * A long synchronous stretch (listing a large tree, thousands of policy answers that resolve as
 * microtasks) would keep timers and the abort signal from firing. `due()` lets the event loop run
 * about every 10 ms, so a cancellation is seen within that.
 */
export function pauser(intervalMs = 10): () => Promise<void> {
  let last = performance.now();
  return async () => {
    const now = performance.now();
    if (now - last < intervalMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    last = performance.now();
  };
}
