import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ServerSentEvent, serverSentEvents } from "../../src/providers/sse.js";
import { splitAt } from "../support/split.js";

async function* chunksOf(parts: readonly string[]): AsyncGenerator<string> {
  for (const part of parts) yield part;
}

async function decode(parts: readonly string[], onChunk?: () => void): Promise<ServerSentEvent[]> {
  const events: ServerSentEvent[] = [];
  for await (const event of serverSentEvents(chunksOf(parts), onChunk)) events.push(event);
  return events;
}

const LF_TEXT = [
  ": OPENROUTER PROCESSING",
  "",
  'data: {"a":1}',
  "",
  "event: error",
  'data: {"error":{"message":"x"}}',
  "",
  ": keep-alive",
  "id: 7",
  "data: first line",
  "data: second line",
  "",
  "data:no-space",
  "",
  "data: héllo 世界 🎉",
  "",
  "data: [DONE]",
  "",
  "",
].join("\n");

const EXPECTED: ServerSentEvent[] = [
  { event: undefined, data: '{"a":1}' },
  { event: "error", data: '{"error":{"message":"x"}}' },
  { event: undefined, data: "first line\nsecond line" },
  { event: undefined, data: "no-space" },
  { event: undefined, data: "héllo 世界 🎉" },
  { event: undefined, data: "[DONE]" },
];

describe("serverSentEvents", () => {
  it("decodes a multi-event text: comments skipped, event names reported, data lines joined", async () => {
    expect(await decode([LF_TEXT])).toEqual(EXPECTED);
  });

  it("any split of the text into chunks decodes to the same events (LF and CRLF)", async () => {
    const crlf = LF_TEXT.replaceAll("\n", "\r\n");
    for (const source of [LF_TEXT, crlf]) {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.integer({ min: 0, max: source.length }), { maxLength: 40 }),
          async (cuts) => {
            expect(await decode(splitAt(source, cuts))).toEqual(EXPECTED);
          },
        ),
        { numRuns: 300 },
      );
    }
  });

  it("one character per chunk decodes the same, including a CRLF split between CR and LF", async () => {
    const crlf = LF_TEXT.replaceAll("\n", "\r\n");
    expect(await decode([...crlf])).toEqual(EXPECTED);
    expect(await decode(["data: a\r", "\n\r", "\ndata: b\r\n", "\r\n"])).toEqual([
      { event: undefined, data: "a" },
      { event: undefined, data: "b" },
    ]);
  });

  it("a text of only comments yields nothing", async () => {
    expect(await decode([": keep-alive\n\n", ": ping\n\n"])).toEqual([]);
  });

  it("an unterminated final event is dropped at end of stream", async () => {
    expect(await decode(["data: a\n\ndata: b"])).toEqual([{ event: undefined, data: "a" }]);
    expect(await decode(["data: a\n\n", "event: x\ndata: b\n"])).toEqual([{ event: undefined, data: "a" }]);
  });

  it("yields each event as soon as the chunk completing it arrives", async () => {
    let released = false;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    async function* source(): AsyncGenerator<string> {
      yield "data: one\n\nda";
      await gate;
      released = true;
      yield "ta: two\n\n";
    }
    const iterator = serverSentEvents(source())[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: { event: undefined, data: "one" } });
    expect(released).toBe(false);
    release();
    expect(await iterator.next()).toEqual({ done: false, value: { event: undefined, data: "two" } });
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it("calls onChunk once per chunk, empty and event-less chunks included", async () => {
    const parts = [": keep-alive\n\n", "", "data: a", "\n\n", "data: b\n\n"];
    let count = 0;
    const events = await decode(parts, () => {
      count += 1;
    });
    expect(count).toBe(parts.length);
    expect(events.map((e) => e.data)).toEqual(["a", "b"]);
  });
});
