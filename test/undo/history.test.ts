import { describe, expect, it } from "vitest";
import type { AnyRecord, EventData } from "../../src/journal/vocabulary.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { netChanges, redoable, turnHistory, turnSpan } from "../../src/undo/history.js";

const file = (text: string) => ({ hash: sha256Hex(text), size: Buffer.byteLength(text), exec: false });

let seq = 0;
function rec<T extends AnyRecord["type"]>(type: T, data: EventData<T>): AnyRecord {
  return { seq: seq++, type, data, time: "", prev: "", hash: "" } as AnyRecord;
}
function changed(
  call_id: string,
  source: EventData<"workspace.changed">["source"],
  change: Partial<Omit<EventData<"workspace.changed">, "call_id" | "source">>,
): AnyRecord {
  return rec("workspace.changed", { call_id, source, created: [], modified: [], deleted: [], ...change });
}
/** An undo: started (back to `target`) and its change. */
function undo(id: string, target: number, change: Partial<EventData<"workspace.changed">>): AnyRecord[] {
  const started = rec("undo.started", { undo_id: id, target: { seq: target }, plan: [] });
  return [started, changed(`undo:${id}`, "undo", change)];
}

describe("the record read back as history", () => {
  it("folds each turn's calls and the net change between points per path", () => {
    seq = 0;
    const records = [
      rec("user.input", { text: "one", turn: 1 }),
      changed("c1", "tool", { created: [{ path: "a.txt", after: file("a1") }] }),
      changed("c1", "tool", { modified: [{ path: "a.txt", before: file("a1"), after: file("a2") }] }),
      rec("user.input", { text: "two", turn: 2 }),
      changed("c2", "shell", { modified: [{ path: "a.txt", before: file("a2"), after: file("a3") }] }),
      changed("c3", "tool", { created: [{ path: "tmp", after: file("t") }] }),
      changed("c4", "tool", { deleted: [{ path: "tmp", before: file("t") }] }),
    ];
    const turns = turnHistory(records);
    expect(turns.map((t) => [t.turn, t.text, t.calls.map((c) => c.callId)])).toEqual([
      [1, "one", ["c1"]],
      [2, "two", ["c2", "c3", "c4"]],
    ]);
    // A call that wrote a file twice shows it once: from nothing to its last content.
    expect(turns[0]?.calls[0]?.changes).toEqual([{ path: "a.txt", before: null, after: file("a2") }]);
    // The whole session: a.txt from nothing to a3; tmp came and went, so it is no net change.
    expect(netChanges(records, -1)).toEqual([{ path: "a.txt", before: null, after: file("a3") }]);
    const span = turnSpan(records, 2);
    expect(span).toEqual({ from: 2, until: Number.POSITIVE_INFINITY });
    expect(netChanges(records, span!.from, span!.until)).toEqual([
      { path: "a.txt", before: file("a2"), after: file("a3") },
    ]);
    expect(netChanges(records, -1, turnSpan(records, 1)!.until)).toEqual([
      { path: "a.txt", before: null, after: file("a2") },
    ]);
    expect(turnSpan(records, 3)).toBeUndefined();
  });

  it("stacks undos and redos: each redo takes back the latest undo not taken back yet", () => {
    seq = 0;
    const m = (path: string, a: string, b: string) => ({
      modified: [{ path, before: file(a), after: file(b) }],
    });
    const records: AnyRecord[] = [
      rec("user.input", { text: "one", turn: 1 }),
      changed("c1", "tool", m("a", "0", "1")),
      rec("user.input", { text: "two", turn: 2 }),
      changed("c2", "tool", m("a", "1", "2")),
    ];
    expect(redoable(records)).toBeUndefined();
    const undoA = undo("A", 2, m("a", "2", "1"));
    records.push(...undoA);
    const undoB = undo("B", 0, m("a", "1", "0"));
    records.push(...undoB);
    expect(redoable(records)).toBe("B");
    // The redo of B: an undo back to just before B started.
    records.push(...undo("R1", (undoB[0]?.seq ?? 0) - 1, m("a", "0", "1")));
    expect(redoable(records)).toBe("A");
    records.push(...undo("R2", (undoA[0]?.seq ?? 0) - 1, m("a", "1", "2")));
    expect(redoable(records)).toBeUndefined();
    // A new undo, then a change made after it: redoing would undo that change too, so none is offered.
    records.push(...undo("C", 2, m("a", "2", "1")));
    expect(redoable(records)).toBe("C");
    records.push(changed("c3", "tool", m("b", "x", "y")));
    expect(redoable(records)).toBeUndefined();
  });
});
