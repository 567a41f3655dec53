import { describe, expect, it } from "vitest";
import { SessionState } from "../../src/engine/state.js";
import type { AnyRecord } from "../../src/journal/vocabulary.js";

/**
 * The fold of a long session holds its messages and the calls of the step in flight, not every
 * call: after thousands of steps its per-call maps are as small as after a few, its counters
 * still count every call, and a fold of the same records from scratch (a resume) agrees.
 */

const STEPS = 5_000;
/** Every this many steps the history before the last few messages is compacted. */
const COMPACT_EVERY = 50;

let seq = 0;
const record = (type: string, data: Record<string, unknown>): AnyRecord =>
  ({ seq: seq++, type, data }) as unknown as AnyRecord;

const call = (step: number) => ({
  id: `c${step}`,
  name: step % 100 === 7 ? "write_file" : "read_file",
  arguments: { path: `f${step % 10}.txt` },
});

function stepRecords(state: SessionState, step: number): AnyRecord[] {
  const c = call(step);
  const status = step === 10 ? "unknown" : step % 100 === 7 ? "denied" : "ok";
  const records: AnyRecord[] = [
    record("model.started", { step, attempt: 1, basis_tokens: 100, estimated_input_tokens: 100 }),
    record("model.reply", { text: "", calls: [c] }),
  ];
  if (status !== "denied")
    records.push(
      record("tool.started", { call_id: c.id, name: c.name, arguments: c.arguments, batch: step }),
    );
  records.push(
    record("tool.result", {
      call_id: c.id,
      name: c.name,
      status,
      summary: `${c.name} ${status}`,
      content: `${step} `.repeat(500),
      ...(status === "ok" ? { data: { path: c.arguments.path, version: `v${step}` } } : {}),
      duration_ms: 1,
    }),
  );
  // The result of five steps ago leaves for an artifact (as pruning does at the window).
  const older = `c${step - 5}`;
  if (step >= 5 && state.results.has(older) && older !== "c10")
    records.push(
      record("context.pruned", {
        results: [{ call_id: older, artifact: { id: `a${step - 5}`, bytes: 2_500 } }],
      }),
    );
  return records;
}

describe("the fold of a long session stays bounded", () => {
  it(`after ${STEPS} steps its per-call maps hold the context's calls, and a fold from scratch agrees`, () => {
    seq = 0;
    const state = new SessionState();
    const all: AnyRecord[] = [record("user.input", { text: "read the files" })];
    state.apply(all[0] as AnyRecord);
    let largest = { started: 0, results: 0, pruned: 0, compactions: 0 };
    for (let step = 0; step < STEPS; step++) {
      for (const r of stepRecords(state, step)) {
        state.apply(r);
        all.push(r);
      }
      if (step % COMPACT_EVERY === COMPACT_EVERY - 1) {
        const compacted = record("context.compacted", {
          step,
          replaced_messages: state.messages.length - 4,
          summary: `read ${step} files`,
        });
        state.apply(compacted);
        all.push(compacted);
      }
      largest = {
        started: Math.max(largest.started, state.started.size),
        results: Math.max(largest.results, state.results.size),
        pruned: Math.max(largest.pruned, state.pruned.size),
        compactions: Math.max(largest.compactions, state.compactionsByStep.size),
      };
    }

    // Bounded by the messages between compactions (about 2 a step), not by the session's length.
    const toolMessages = state.messages.filter((m) => m.role === "tool").length;
    expect(largest.started).toBeLessThanOrEqual(2);
    expect(largest.results).toBeLessThanOrEqual(COMPACT_EVERY + 3);
    expect(largest.pruned).toBeLessThanOrEqual(COMPACT_EVERY);
    expect(largest.compactions).toBe(1);
    expect(state.results.size).toBeLessThanOrEqual(toolMessages + 1);
    for (const id of state.pruned.keys())
      expect(state.messages.some((m) => m.role === "tool" && m.call_id === id)).toBe(true);

    // Counted all the same: every call started, and every id ever used stays taken.
    const denied = STEPS / 100;
    expect(state.toolCalls).toBe(STEPS - denied);
    expect(state.turnToolCalls).toBe(STEPS - denied);
    expect(state.callIds.size).toBe(STEPS);
    expect(state.callIds.has("c0")).toBe(true);
    expect(state.history.length).toBe(STEPS);
    expect(state.pendingCalls()).toEqual([]);
    expect(state.turnOutcomes.get("write_file")).toEqual({ denied, other: 0 });
    expect(state.turnOutcomes.get("read_file")).toEqual({ denied: 0, other: STEPS - denied });

    // The unknown outcome stays, with its arguments, until a person resolves it; compaction pins it.
    expect(state.unresolvedUnknowns().map((r) => r.call_id)).toEqual(["c10"]);
    expect(state.started.get("c10")?.arguments).toEqual({ path: "f0.txt" });
    expect(state.startedWithoutResult()).toEqual([]);
    expect(
      state.messages.some(
        (m) => m.role === "user" && m.content.startsWith("[Unresolved: the outcome of call c10"),
      ),
    ).toBe(true);

    // A resume folds the records read back from disk: the same messages and counts.
    const resumed = SessionState.from(all);
    expect(resumed.messages).toEqual(state.messages);
    expect(resumed.toolCalls).toBe(state.toolCalls);
    expect([...resumed.results.keys()]).toEqual([...state.results.keys()]);

    // The next reply's calls are pending until each starts or has a result.
    const next = [call(STEPS), call(STEPS + 1)];
    state.apply(record("model.reply", { text: "", calls: next }));
    expect(state.pendingCalls().map((c) => c.id)).toEqual([next[0]?.id, next[1]?.id]);
    state.apply(
      record("tool.started", {
        call_id: next[0]?.id,
        name: "read_file",
        arguments: next[0]?.arguments,
        batch: 0,
      }),
    );
    expect(state.pendingCalls().map((c) => c.id)).toEqual([next[1]?.id]);
    expect(state.startedWithoutResult().map((s) => s.call_id)).toEqual([next[0]?.id]);
  });

  it("knows a spawning call settled after its result has left the fold", () => {
    seq = 0;
    const state = SessionState.from([
      record("user.input", { text: "go" }),
      record("model.reply", {
        text: "",
        calls: [{ id: "sh", name: "shell", arguments: { command: "make" } }],
      }),
      record("tool.started", { call_id: "sh", name: "shell", arguments: { command: "make" }, batch: 0 }),
      record("process.spawned", {
        call_id: "sh",
        pid: 10,
        pgid: 10,
        boot_id: "b",
        start_ticks: 1,
        sandboxed: true,
      }),
    ]);
    expect(state.spawnSettled("sh")).toBe(false);
    state.apply(
      record("tool.result", {
        call_id: "sh",
        name: "shell",
        status: "ok",
        summary: "",
        content: "",
        duration_ms: 1,
      }),
    );
    state.apply(
      record("context.compacted", { step: 1, replaced_messages: state.messages.length, summary: "s" }),
    );
    expect(state.results.has("sh")).toBe(false);
    expect(state.spawnSettled("sh")).toBe(true);
  });
});
