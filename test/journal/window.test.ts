import { describe, expect, it } from "vitest";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import { RECENT_RECORDS, RecordWindow } from "../../src/journal/window.js";

/** A chained record of `user.input` (only seq, hash and prev matter to the window). */
function record(seq: number): AnyRecord {
  return {
    seq,
    type: "user.input",
    data: { text: `r${seq}` },
    time: "2026-12-07T00:00:00.000Z",
    prev: seq === 0 ? null : `h${seq - 1}`,
    hash: `h${seq}`,
  } as unknown as AnyRecord;
}

describe("a writer's record window", () => {
  it("after 5,000 appends holds at most its window; readAll still gives every record, staged ones last", async () => {
    const stored: AnyRecord[] = [];
    const window = new RecordWindow("s1", []);
    let largest = 0;
    for (let seq = 0; seq < 5_000; seq++) {
      const staged = seq % 7 === 3;
      window.add([record(seq)], staged);
      if (!staged) {
        // A durable append stores what was staged before it, then itself.
        while (stored.length <= seq) stored.push(record(stored.length));
        window.stored();
      }
      largest = Math.max(largest, window.recent.length);
    }
    window.add([record(5_000), record(5_001)], true);
    expect(largest).toBeLessThanOrEqual(2 * RECENT_RECORDS);
    expect(window.recent.length).toBeLessThanOrEqual(2 * RECENT_RECORDS);
    expect(window.length).toBe(5_002);
    expect(window.last?.seq).toBe(5_001);

    const all = await window.readAll(() => stored);
    expect(all.map((r) => r.seq)).toEqual(Array.from({ length: 5_002 }, (_, i) => i));
    // Storage that does not end where this writer's stored chain ends is refused, not shown.
    await expect(window.readAll(() => stored.slice(0, -1))).rejects.toMatchObject({ code: "CORRUPT" });
  });

  it("hands out the records loaded at open until the first append, then lets them go", async () => {
    const opened = Array.from({ length: 500 }, (_, i) => record(i));
    const window = new RecordWindow("s1", opened);
    expect(window.recent.length).toBe(RECENT_RECORDS);
    let loads = 0;
    const load = () => {
      loads += 1;
      return opened;
    };
    expect((await window.readAll(load)).length).toBe(500);
    expect(loads).toBe(0);
    window.add([record(500)], false);
    window.stored();
    const after = await window.readAll(() => [...opened, record(500)]);
    expect(after.map((r) => r.seq)).toEqual(Array.from({ length: 501 }, (_, i) => i));
  });
});
