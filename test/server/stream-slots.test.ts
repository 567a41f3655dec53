import { describe, expect, it } from "vitest";
import { StreamSlots } from "../../src/server/stream-slots.js";

describe("StreamSlots", () => {
  it("caps each identity, and a slot given back any number of times counts once", () => {
    const slots = new StreamSlots(2);
    const a = slots.take("alice");
    const b = slots.take("alice");
    expect(a && b).toBeTruthy();
    expect(slots.take("alice")).toBeUndefined();
    // Another identity is not starved by alice.
    expect(slots.take("bob")).toBeDefined();
    a?.();
    a?.();
    a?.();
    expect(slots.held("alice")).toBe(1);
    const c = slots.take("alice");
    expect(c).toBeDefined();
    expect(slots.take("alice")).toBeUndefined();
    b?.();
    c?.();
    expect(slots.held("alice")).toBe(0);
  });
});
