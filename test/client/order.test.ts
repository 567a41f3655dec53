import { describe, expect, it } from "vitest";
import type { Notification } from "../../src/api/index.js";
import { SessionOrder } from "../../src/client/order.js";
import { durable } from "./fake.js";

const note = (seq: number) => durable("s", seq, "session/record") as unknown as Notification;

describe("SessionOrder", () => {
  it("holds a notification until the ones before it arrive, and drops repeats", () => {
    const out: number[] = [];
    const order = new SessionOrder(1, (n) => out.push("seq" in n.params ? n.params.seq : -1));
    for (const seq of [3, 1, 1, 2, 5, 4, 3]) order.push(note(seq));
    expect(out).toEqual([1, 2, 3, 4, 5]);
    expect(order.lastSeq).toBe(5);
    order.stop();
  });

  it("gives up on a gap the server never fills after a while, without reordering", async () => {
    const out: number[] = [];
    const order = new SessionOrder(1, (n) => out.push("seq" in n.params ? n.params.seq : -1), 20);
    order.push(note(1));
    order.push(note(3));
    order.push(note(6));
    expect(out).toEqual([1]);
    await new Promise((r) => setTimeout(r, 100));
    expect(out).toEqual([1, 3, 6]);
    order.push(note(2));
    expect(out).toEqual([1, 3, 6]);
    order.stop();
  });
});
