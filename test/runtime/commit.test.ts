// Ordered commit, durable intent before execution, and the tool-call budget.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AnyRecord } from "../../src/journal/vocabulary.js";
import { count, run, tempWorkspace, type Workspace } from "../support/session.js";
import { ofType, resultOf, results, spyingBackend, starts } from "./helpers.js";
import { ToolLab, waitTool } from "./tools.js";

let ws: Workspace;
let lab: ToolLab;
beforeEach(async () => {
  ws = await tempWorkspace();
  lab = new ToolLab();
});
afterEach(async () => ws.cleanup());

const done = { text: "done" };
const wait = (id: string, ms: number) => ({ id, name: "wait", arguments: { ms } });

describe("ordered commit", () => {
  it("journals results in call order while live progress follows completion order", async () => {
    const finished: string[] = [];
    await run(ws, {
      tools: [waitTool(lab)],
      turns: [{ calls: [wait("slow", 300), wait("fast", 10), wait("mid", 100)] }, done],
      extra: { listener: { callFinished: (info) => finished.push(info.call_id) } },
    });
    expect(finished).toEqual(["fast", "mid", "slow"]);
    const records = await ws.journal();
    const committed = ofType(records, "tool.result").map((r) => (r.data as { call_id: string }).call_id);
    expect(committed).toEqual(["slow", "fast", "mid"]);
    // One batch: the order is the commit's doing, not the scheduler's.
    expect(new Set((await starts(ws)).map((s) => s.batch)).size).toBe(1);
    const all = await results(ws);
    for (const id of ["fast", "mid"]) {
      expect(resultOf(all, id).trace?.commit_wait_ms).toBeGreaterThan(0);
    }
    const seqs = ofType(records, "tool.result").map((r) => r.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  it("makes every tool.started of a batch durable in one append before any handler runs", async () => {
    const { backend, appends } = spyingBackend(ws.store);
    let appendsWhenFirstHandlerRan = -1;
    lab.onStart = () => {
      if (appendsWhenFirstHandlerRan < 0) appendsWhenFirstHandlerRan = appends.length;
    };
    await run(ws, {
      tools: [waitTool(lab)],
      turns: [{ calls: [wait("a", 20), wait("b", 5), wait("c", 10)] }, done],
      extra: { store: backend },
    });
    const startAppends = appends.filter((types) => types.includes("tool.started"));
    expect(startAppends).toEqual([["tool.started", "tool.started", "tool.started"]]);
    const startIndex = appends.indexOf(startAppends[0]!);
    expect(appendsWhenFirstHandlerRan).toBe(startIndex + 1);
    const records = await ws.journal();
    const started = ofType(records, "tool.started").map((r) => r.seq);
    expect(started).toEqual([started[0], started[0]! + 1, started[0]! + 2]);
    const firstResult = Math.min(...ofType(records, "tool.result").map((r) => r.seq));
    expect(Math.max(...started)).toBeLessThan(firstResult);
  });
});

describe("the tool-call budget", () => {
  const fiveCalls = { calls: ["c1", "c2", "c3", "c4", "c5"].map((id) => wait(id, 1)) };

  it("starts only what the budget allows and leaves the rest unstarted for a resume", async () => {
    const summary = await run(ws, {
      tools: [waitTool(lab)],
      turns: [fiveCalls, done],
      limits: { maxToolCalls: 3 },
    });
    expect(summary).toMatchObject({ status: "stopped", reason: "budget_exhausted" });
    const records = await ws.journal();
    const startedIds = (list: readonly AnyRecord[]) =>
      ofType(list, "tool.started").map((r) => (r.data as { call_id: string }).call_id);
    expect(startedIds(records)).toEqual(["c1", "c2", "c3"]);
    expect((await results(ws)).map((r) => r.call_id)).toEqual(["c1", "c2", "c3"]);
    expect(lab.runs("wait")).toBe(3);
    expect(records.at(-1)?.type).toBe("run.stopped");

    const resumed = await run(ws, {
      tools: [waitTool(lab)],
      turns: [fiveCalls, done],
      limits: { maxToolCalls: 10 },
    });
    expect(resumed.status).toBe("unverified");
    const after = await ws.journal();
    expect(startedIds(after)).toEqual(["c1", "c2", "c3", "c4", "c5"]);
    expect((await results(ws)).map((r) => [r.call_id, r.status])).toEqual(
      ["c1", "c2", "c3", "c4", "c5"].map((id) => [id, "ok"]),
    );
    expect(lab.runs("wait")).toBe(5);
    // The unstarted calls ran without asking the model again.
    expect(count(after, "model.reply")).toBe(2);
  });
});
