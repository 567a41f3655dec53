import { describe, expect, it } from "vitest";
import { EVENT_SCHEMAS, EVENT_TYPES, isEventType } from "../../src/journal/vocabulary.js";
import { lazyRecord, once } from "../../src/shared/lazy-record.js";

describe("lazyRecord", () => {
  it("lists every key without building any; a read builds that entry once", () => {
    const built: string[] = [];
    const record = lazyRecord({
      a: () => {
        built.push("a");
        return { value: 1 };
      },
      b: () => {
        built.push("b");
        return { value: 2 };
      },
    });
    expect(Object.keys(record)).toEqual(["a", "b"]);
    expect("b" in record && Object.hasOwn(record, "a")).toBe(true);
    expect(built).toEqual([]);
    const first = record.a;
    expect(record.a).toBe(first);
    expect(first.value).toBe(1);
    expect(built).toEqual(["a"]);
    expect(() => {
      (record as { a: unknown }).a = { value: 3 };
    }).toThrow(TypeError);
  });

  it("once builds its value at the first call only", () => {
    let calls = 0;
    const value = once(() => ({ n: ++calls }));
    expect(calls).toBe(0);
    expect(value()).toBe(value());
    expect(calls).toBe(1);
  });
});

describe("the journal vocabulary, built on use", () => {
  it("still lists every event type and checks data against its schema", () => {
    expect(EVENT_TYPES.length).toBeGreaterThan(50);
    expect(EVENT_TYPES).toContain("session.started");
    expect(isEventType("model.reply")).toBe(true);
    expect(isEventType("no.such")).toBe(false);
    const schema = EVENT_SCHEMAS["user.input"];
    expect(EVENT_SCHEMAS["user.input"]).toBe(schema);
    expect(schema.safeParse({ text: 42 }).success).toBe(false);
  });
});
