// The pipeline's stages, each checked on its own (the engine-level tests beside this file check
// them together): validation, execution with retries and abandonment, normalization, ordered commit.

import { describe, expect, it } from "vitest";
import { MemoryArtifactStore } from "../../src/artifacts/memory-store.js";
import type { AnyNewEvent } from "../../src/journal/vocabulary.js";
import type { ToolCall } from "../../src/protocol/types.js";
import { OrderedCommitter } from "../../src/runtime/commit.js";
import { Deadlines } from "../../src/runtime/deadlines.js";
import { type Execution, executeWithRetries } from "../../src/runtime/execute.js";
import { HookLog } from "../../src/runtime/hook-log.js";
import { normalize } from "../../src/runtime/normalize.js";
import type { ProposalRecord } from "../../src/runtime/ports.js";
import { type Prepared, prepare } from "../../src/runtime/prepare.js";
import { ToolRegistry } from "../../src/runtime/registry.js";
import { errorResult, okResult, type ToolResult } from "../../src/runtime/result.js";
import { createToolContext } from "../../src/tools/context.js";
import type { AnyTool } from "../../src/tools/tool.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";
import { flakyTool, slowIgnoringTool, ToolLab, waitTool } from "./tools.js";

const hooks = new HookLog("s", undefined);

function snapshotOf(...tools: AnyTool[]) {
  const registry = new ToolRegistry();
  for (const tool of tools) registry.register(tool);
  return registry.snapshot();
}

async function prepared(tool: AnyTool, args: unknown, id = "c1"): Promise<Prepared> {
  const preparation = await prepare(
    0,
    { id, name: tool.name, arguments: args } as ToolCall,
    snapshotOf(tool),
    hooks,
  );
  if (preparation.kind !== "run") throw new Error(`not runnable: ${preparation.result.summary}`);
  return preparation.prepared;
}

/** An in-memory journal of what a stage records, one entry per write. */
function journal() {
  const writes: AnyNewEvent[][] = [];
  return { writes, recorder: { record: async (events: AnyNewEvent[]) => void writes.push(events) } };
}

function execution(retryAttempts: number, settleGraceMs = 10_000): Execution {
  const fs = new MemoryWorkspaceFs();
  const artifacts = new MemoryArtifactStore();
  return {
    options: { retry: { maxAttempts: retryAttempts, baseDelayMs: 1, maxDelayMs: 2 }, settleGraceMs },
    hooks,
    deadlines: new Deadlines(),
    context: (p, signal) => createToolContext({ callId: p.call.id, signal, fs, artifacts }),
  };
}

describe("prepare", () => {
  const lab = new ToolLab();
  const snapshot = snapshotOf(waitTool(lab));

  it("names the closest tool for an unknown one and lists the available tools", async () => {
    const result = await prepare(0, { id: "c1", name: "wiat", arguments: {} }, snapshot, hooks);
    expect(result).toMatchObject({
      kind: "done",
      result: { error_type: "UNKNOWN_TOOL", data: { available: ["wait"], closest: "wait" } },
    });
  });

  it("reports each invalid field, and never runs the call", async () => {
    const result = await prepare(0, { id: "c1", name: "wait", arguments: { ms: -1, x: 1 } }, snapshot, hooks);
    expect(result.kind).toBe("done");
    if (result.kind !== "done") return;
    expect(result.result.error_type).toBe("INVALID_ARGUMENTS");
    const fields = (result.result.data?.fields ?? []) as { field: string }[];
    expect(fields.map((f) => f.field).sort()).toEqual(["(arguments)", "ms"]);
    expect(lab.runs()).toBe(0);
  });

  it("derives resources and concurrency safety from valid arguments", async () => {
    const result = await prepare(3, { id: "c1", name: "wait", arguments: { ms: 1 } }, snapshot, hooks);
    expect(result).toMatchObject({
      kind: "run",
      prepared: { index: 3, args: { ms: 1 }, concurrencySafe: true, resources: { read: [], write: [] } },
    });
  });
});

describe("executeWithRetries", () => {
  it("retries an idempotent tool's transient failure, journaling each retry before waiting", async () => {
    const lab = new ToolLab();
    const call = await prepared(flakyTool(lab, { name: "flaky", idempotency: "idempotent" }), {
      key: "k",
      failures: 2,
    });
    const { writes, recorder } = journal();
    const { result, attempts } = await executeWithRetries(
      call,
      execution(3),
      new AbortController().signal,
      recorder,
    );
    expect(result.status).toBe("ok");
    expect(attempts).toBe(3);
    expect(writes.flat().map((e) => e.type)).toEqual(["tool.retrying", "tool.retrying"]);
  });

  it("waits as the retry policy says: equal jitter in a window doubling up to maxDelayMs, journaled first", async () => {
    const lab = new ToolLab();
    const call = await prepared(flakyTool(lab, { name: "flaky", idempotency: "idempotent" }), {
      key: "k",
      failures: 3,
    });
    const { writes, recorder } = journal();
    const slept: number[] = [];
    const base = execution(4);
    const { result, attempts } = await executeWithRetries(
      call,
      {
        ...base,
        options: {
          ...base.options,
          retry: { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 300 },
          random: () => 0.5,
          sleep: async (ms) => {
            slept.push(ms);
          },
        },
      },
      new AbortController().signal,
      recorder,
    );
    expect(result.status).toBe("ok");
    expect(attempts).toBe(4);
    // Windows 100, 200, 300 (capped): each wait is 3/4 of its window at random 0.5.
    const retries = writes.flat().map((e) => e.data as { attempt: number; retry_in_ms: number });
    expect(retries.map((r) => [r.attempt, r.retry_in_ms])).toEqual([
      [1, 75],
      [2, 150],
      [3, 225],
    ]);
    expect(slept).toEqual([75, 150, 225]);
  });

  it("never retries a non-idempotent tool", async () => {
    const lab = new ToolLab();
    const call = await prepared(flakyTool(lab, { name: "flaky", idempotency: "non_idempotent" }), {
      key: "k",
      failures: 1,
    });
    const { writes, recorder } = journal();
    const { result, attempts } = await executeWithRetries(
      call,
      execution(3),
      new AbortController().signal,
      recorder,
    );
    expect(result).toMatchObject({ status: "error", error_type: "IO_ERROR" });
    expect(attempts).toBe(1);
    expect(writes).toEqual([]);
  });

  it("abandons a handler that ignores its signal after the grace period: outcome unknown", async () => {
    const lab = new ToolLab();
    const call = await prepared(slowIgnoringTool(lab, { timeoutMs: 20 }), { ms: 1_000 });
    const began = Date.now();
    const { result } = await executeWithRetries(
      call,
      execution(1, 20),
      new AbortController().signal,
      journal().recorder,
    );
    expect(Date.now() - began).toBeLessThan(900);
    expect(result).toMatchObject({
      status: "timeout",
      error_type: "TIMEOUT",
      operation_applied: "unknown",
      data: { abandoned: true },
    });
  });
});

describe("normalize", () => {
  it("keeps content within the preview limit, stores the whole, and traces how the call ran", async () => {
    const artifacts = new MemoryArtifactStore();
    const ref = { id: "a".repeat(64), sha256: "a".repeat(64), bytes: 3 };
    const raw = okResult(
      { call_id: "c1", name: "t" },
      { summary: "s", content: "x".repeat(100), data: { ref } },
      0,
    );
    const facts = { batch: 4, queueWaitMs: 2, startedAt: Date.now(), attempts: 2 };
    const result = await normalize(raw, facts, 10, artifacts);
    expect(result.artifact).toBeDefined();
    expect(result.content.length).toBeLessThan(100);
    expect(result.trace).toMatchObject({
      batch: 4,
      queue_wait_ms: 2,
      attempts: 2,
      output_bytes: 100,
      artifacts: [result.artifact?.id, ref.id],
    });
  });
});

describe("OrderedCommitter", () => {
  const ok = (id: string): ToolResult =>
    okResult({ call_id: id, name: "t" }, { summary: id, content: id }, 0);

  it("commits in call order, whatever order results arrive in, and reports each as it finishes", async () => {
    const { writes, recorder } = journal();
    const finished: string[] = [];
    const denied = errorResult({ call_id: "c0", name: "t" }, "POLICY_DENIED", "no");
    const committer = new OrderedCommitter([denied, undefined, undefined], recorder, {
      callFinished: (info) => finished.push(info.call_id),
    });
    committer.complete(2, ok("c2"));
    await committer.flush();
    expect(writes.map((w) => w.map((e) => (e.data as { call_id: string }).call_id))).toEqual([["c0"]]);
    committer.settle(1, ok("c1"));
    await committer.flush();
    expect(writes.map((w) => w.map((e) => (e.data as { call_id: string }).call_id))).toEqual([
      ["c0"],
      ["c1", "c2"],
    ]);
    expect(committer.committed.map((r) => r.call_id)).toEqual(["c0", "c1", "c2"]);
    expect(finished).toEqual(["c0", "c1"]);
  });

  it("journals a proposing call's proposals just before its result", async () => {
    const { writes, recorder } = journal();
    const committer = new OrderedCommitter([undefined], recorder);
    const proposal: ProposalRecord = {
      proposal_id: "p1",
      path: "a.txt",
      base_version: null,
      content: "a",
      content_sha256: "b".repeat(64),
      diff: "+a",
    };
    committer.complete(0, { ...ok("c0"), proposals: [proposal] });
    await committer.flush();
    expect(writes[0]?.map((e) => e.type)).toEqual(["proposal.recorded", "tool.result"]);
    expect(writes[0]?.[1]?.data).not.toHaveProperty("proposals");
  });
});
