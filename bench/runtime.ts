import { z } from "zod";
import { MemoryArtifactStore } from "../src/artifacts/memory-store.js";
import { modePolicy } from "../src/policy/policy-permissions.js";
import { ToolRuntime } from "../src/runtime/pipeline.js";
import { ToolRegistry } from "../src/runtime/registry.js";
import { defineTool } from "../src/tools/tool.js";
import { MemoryWorkspaceFs } from "../src/workspace/memory-fs.js";
import { type BenchRow, median, round } from "./stats.js";

const waitTool = defineTool({
  name: "wait",
  description: "Waits for the given number of milliseconds, then reports it. Used to measure scheduling.",
  version: "1",
  input: z.strictObject({ key: z.string(), ms: z.number().int().nonnegative() }),
  effect: "read_only",
  idempotency: "pure",
  timeoutMs: 10_000,
  resources: (args) => ({ read: [`bench:${args.key}`], write: [] }),
  concurrencySafe: () => true,
  async execute(args) {
    if (args.ms > 0) await new Promise((resolve) => setTimeout(resolve, args.ms));
    return { summary: `waited ${args.ms} ms`, content: `waited ${args.ms} ms` };
  },
});

function runtime(poolSize: number): ToolRuntime {
  const registry = new ToolRegistry().register(waitTool);
  const policy = modePolicy({ write: "allow" });
  return new ToolRuntime({
    sessionId: "bench",
    snapshot: registry.snapshot(),
    fs: new MemoryWorkspaceFs({}),
    artifacts: new MemoryArtifactStore(),
    permissions: policy,
    approver: { request: async () => ({ decision: "deny", scope: "once", by: "bench" }) },
    grants: { covers: () => false, add: () => {} },
    observedVersion: () => undefined,
    previewLimitBytes: 40_000,
    poolSize,
    retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
    settleGraceMs: 1000,
  });
}

const recorder = { record: async () => {} };

async function runCalls(rt: ToolRuntime, count: number, ms: number, offset: number): Promise<number> {
  const calls = Array.from({ length: count }, (_, i) => ({
    id: `c${offset + i}`,
    name: "wait",
    arguments: { key: `k${i}`, ms },
  }));
  const began = performance.now();
  const outcome = await rt.runCalls({
    calls,
    remainingToolCalls: count,
    signal: new AbortController().signal,
    recorder,
    firstBatchId: 0,
  });
  if (outcome.committed.length !== count) throw new Error("not every call committed");
  return performance.now() - began;
}

/** Issue 3: parallel speed-up with pool 8, and pipeline overhead per call. */
export async function benchRuntime(): Promise<BenchRow[]> {
  const parallel: number[] = [];
  const sequential: number[] = [];
  for (let i = 0; i < 5; i++) {
    parallel.push(await runCalls(runtime(8), 16, 50, i * 100));
    sequential.push(await runCalls(runtime(1), 16, 50, i * 100));
  }
  const p = median(parallel);
  const s = median(sequential);

  const rt = runtime(8);
  const N = 2000;
  await runCalls(rt, 200, 0, 0);
  const pipelineTimes: number[] = [];
  for (let i = 0; i < 5; i++) pipelineTimes.push((await runCalls(rt, N, 0, i * N)) / N);
  const directTimes: number[] = [];
  for (let r = 0; r < 5; r++) {
    const began = performance.now();
    for (let i = 0; i < N; i++) {
      const args = waitTool.input.parse({ key: `k${i}`, ms: 0 });
      await waitTool.execute(args, undefined as never);
    }
    directTimes.push((performance.now() - began) / N);
  }
  const pipeline = median(pipelineTimes) * 1000;
  const direct = median(directTimes) * 1000;
  return [
    { name: "16 x 50 ms calls, pool 8", value: round(p, 1), unit: "ms" },
    { name: "16 x 50 ms calls, sequential", value: round(s, 1), unit: "ms" },
    { name: "parallel speed-up", value: round(s / p, 2), unit: "x", note: "goal >= 6.5x" },
    { name: "pipeline per call (validate..project)", value: round(pipeline, 1), unit: "us" },
    { name: "handler called directly", value: round(direct, 1), unit: "us" },
    { name: "pipeline overhead per call", value: round(pipeline - direct, 1), unit: "us" },
  ];
}
