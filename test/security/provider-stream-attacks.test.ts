import { describe, expect, it } from "vitest";
import { EventSizeGuard } from "../../src/providers/event-size.js";
import { ProviderError } from "../../src/providers/provider.js";
import { serverSentEvents } from "../../src/providers/sse.js";

/*
 * A hostile endpoint (or one posing as a provider) answers with an event that never ends: one
 * `data:` line of gigabytes, or endless `data:` lines without the blank line that completes an
 * event. An SSE parser holds all of it; before the bound harness grew to 1.4 GB and failed with
 * "Invalid string length". The end-to-end attack through each provider is
 * test/e2e/attack-provider-stream.test.ts; these pin the guard's counting.
 */

async function collect(chunks: string[], max: number): Promise<string[]> {
  async function* source() {
    yield* chunks;
  }
  const events: string[] = [];
  for await (const event of serverSentEvents(source(), () => undefined, max)) events.push(event.data);
  return events;
}

describe("an event stream's events are bounded", () => {
  it("one line that never ends is refused once it passes the bound, as a non-retryable provider error", async () => {
    const failure = await collect(["data: ", "x".repeat(60), "x".repeat(60)], 100).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ProviderError);
    expect(failure).toMatchObject({ code: "SERVER", retryable: false, providerCode: "invalid_response" });
    expect((failure as Error).message).toBe(
      "malformed response: the stream sent more than 100 characters without completing an event",
    );
  });

  it("many short data lines without the blank line that ends the event count together", async () => {
    const lines = Array.from({ length: 20 }, () => "data: xxxx\n");
    await expect(collect(lines, 100)).rejects.toThrow("without completing an event");
  });

  it("a long stream of complete events passes: the count starts again at every blank line", async () => {
    const events = Array.from({ length: 50 }, (_, i) => `data: {"n":${i}}\r\n\r\n`);
    const received = await collect(events, 100);
    expect(received).toHaveLength(50);
    expect(received[49]).toBe('{"n":49}');
  });

  it("counts bytes the same way for SDK streams, across chunk boundaries", () => {
    const guard = new EventSizeGuard(10);
    const bytes = (text: string) => new TextEncoder().encode(text);
    // "data: 123\n" then "\n" in the next chunk: the blank line completes the event.
    guard.feed(bytes("data: 123\n"));
    guard.feed(bytes("\ndata: 45"));
    expect(() => guard.feed(bytes("6789"))).toThrow(ProviderError);
  });
});
