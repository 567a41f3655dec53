/**
 * Poll `check` every 10 ms until it holds; throws after `ms`. For state a test cannot await an
 * event for (another process's files, a fake's counters).
 */
export async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
