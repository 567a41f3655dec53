import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CallIdSet, callIdsIn } from "../../src/engine/call-ids.js";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import { count, run, tempWorkspace, type Workspace } from "../support/session.js";

/** The re-run number recovery used to take from the ids' strings: the reference for `latestRerun`. */
function latestRerunOfStrings(ids: readonly string[], callId: string): number {
  const head = `${callId}/r`;
  let latest = 0;
  for (const id of ids) {
    if (!id.startsWith(head)) continue;
    const k = Number(id.slice(head.length).split("/")[0]);
    if (Number.isInteger(k)) latest = Math.max(latest, k);
  }
  return latest;
}

describe("the set of call ids a session used", () => {
  it("answers every id added and none of as many others, in 8-22 bytes an id", () => {
    const set = new CallIdSet();
    const ids = Array.from({ length: 50_000 }, (_, i) => `call_${i.toString(36)}_${(i * 7919) % 104729}`);
    for (const id of ids) set.add(id);
    for (const id of ids) set.add(id);
    expect(set.size).toBe(ids.length);
    expect(ids.every((id) => set.has(id))).toBe(true);
    const others = ids.map((id) => `${id}x`);
    expect(others.filter((id) => set.has(id))).toEqual([]);
    expect(set.has("")).toBe(false);
    expect(set.bytes).toBeLessThanOrEqual(22 * set.size + 16 * 64);
    expect(set.bytes).toBeGreaterThanOrEqual(8 * set.size);
  });

  it("knows the latest re-run of a call's program as the ids' strings told it", () => {
    const ids = [
      "k1",
      "k1/1",
      "k1/r1",
      "k1/r1/1",
      "k1/r2/3",
      "k1/r2/3/r4/1",
      "k10/r7",
      "x/rfoo",
      "y/r-2",
      "z/r",
    ];
    const set = new CallIdSet();
    for (const id of ids) set.add(id);
    for (const callId of ["k1", "k1/r2/3", "k10", "k", "x", "y", "z", "nothing"])
      expect([callId, set.latestRerun(callId)]).toEqual([callId, latestRerunOfStrings(ids, callId)]);
    expect(set.latestRerun("k1")).toBe(2);
    expect(set.latestRerun("k1/r2/3")).toBe(4);
  });

  it("reads the ids a journal's records use as the fold counts them", () => {
    const records = [
      { type: "model.reply", data: { text: "", calls: [{ id: "a", name: "read_file", arguments: {} }] } },
      { type: "tool.started", data: { call_id: "a", name: "read_file", arguments: {}, batch: 0 } },
      { type: "tool.started", data: { call_id: "a/1", parent_call_id: "a", name: "read_file", batch: 0 } },
      { type: "tool.result", data: { call_id: "a/2", parent_call_id: "a", name: "read_file", status: "ok" } },
      { type: "user.command", data: { call_id: "u1", command: "ls" } },
    ] as unknown as AnyRecord[];
    expect([...callIdsIn(records)]).toEqual(["a", "a/1", "a/2"]);
  });
});

describe("a reply that reuses a call id", () => {
  let ws: Workspace;
  beforeEach(async () => {
    ws = await tempWorkspace({ "hello.txt": "helo, harness\n" });
  });
  afterEach(async () => ws.cleanup());

  it("is refused once its id is confirmed in the journal; fresh ids run", async () => {
    const read = (id: string) => ({ id, name: "read_file", arguments: { path: "hello.txt" } });
    const summary = await run(ws, {
      turns: [{ calls: [read("c1")] }, { calls: [read("c2")] }, { calls: [read("c1")] }, { text: "done" }],
    });
    expect(summary).toMatchObject({ status: "stopped", reason: "protocol_error" });
    expect(summary.message).toContain('reused tool call id "c1"');
    const records = await ws.journal();
    expect(count(records, "tool.result")).toBe(2);
    expect(count(records, "model.protocol_error")).toBe(1);
  });
});
