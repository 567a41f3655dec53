import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { EventStreamWriter } from "../../src/server/event-stream.js";
import type { Notification } from "../../src/server/notifications.js";

/** A response whose socket takes `capacity` bytes, then more only after `drain()`. */
class FakeResponse extends EventEmitter {
  written: string[] = [];
  writableLength = 0;
  destroyed = false;
  socket = { uncork() {} };
  constructor(private capacity: number) {
    super();
  }
  write(text: string): boolean {
    this.written.push(text);
    this.writableLength += text.length;
    return this.writableLength < this.capacity;
  }
  drain(): void {
    this.writableLength = 0;
    this.emit("drain");
  }
  destroy(): void {
    this.destroyed = true;
  }
}

const note = (seq: number, text = ""): Notification => ({
  method: "session/record",
  params: { session: "s", seq, text },
});

function* counted(total: number, pulls: { n: number }): Generator<Notification> {
  for (let seq = 0; seq < total; seq++) {
    pulls.n += 1;
    yield note(seq);
  }
}

describe("EventStreamWriter", () => {
  it("pulls the replay only as the socket takes it, then the live events, in order", () => {
    const res = new FakeResponse(200);
    const pulls = { n: 0 };
    const writer = new EventStreamWriter(
      res as unknown as ServerResponse,
      "s",
      { maxQueuedBytes: 1 << 20, stallMs: 60_000 },
      () => {},
    );
    writer.push(note(100), true);
    writer.start(counted(1_000_000, pulls));
    // A blocked socket stops the replay: not a million events built for a reader that waits.
    expect(pulls.n).toBeLessThan(10);
    res.drain();
    expect(pulls.n).toBeLessThan(20);
    writer.close();
  });

  it("drops a reader whose live queue passes the bound, once, and writes nothing after", () => {
    const res = new FakeResponse(10);
    const drops: string[] = [];
    const writer = new EventStreamWriter(
      res as unknown as ServerResponse,
      "s",
      { maxQueuedBytes: 10_000, stallMs: 60_000 },
      (reason) => drops.push(reason),
    );
    writer.start([][Symbol.iterator]());
    for (let seq = 0; seq < 1_000; seq++) writer.push(note(seq, "x".repeat(100)), true);
    expect(res.destroyed).toBe(true);
    expect(drops).toHaveLength(1);
    const count = res.written.length;
    res.drain();
    writer.push(note(2_000), true);
    expect(res.written.length).toBe(count);
  });

  it("a reader that keeps up gets every live event once, with its id", () => {
    const res = new FakeResponse(1 << 30);
    const writer = new EventStreamWriter(
      res as unknown as ServerResponse,
      "s",
      { maxQueuedBytes: 1_000, stallMs: 60_000 },
      () => {},
    );
    writer.start([note(0)][Symbol.iterator]());
    for (let seq = 1; seq < 5_000; seq++) writer.push(note(seq, "y".repeat(50)), true);
    expect(res.destroyed).toBe(false);
    const ids = res.written.map((text) => /^id: s:(\d+)$/m.exec(text)?.[1]).map(Number);
    expect(ids).toEqual(Array.from({ length: 5_000 }, (_, i) => i));
  });
});
