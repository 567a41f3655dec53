// The eight practice experiments of the tool runtime (timeouts, cancellation, retries, scheduling...), at engine level.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { createFileTools } from "../../src/tools/builtin.js";
import { count, Recording, run, scripted, tempWorkspace, type Workspace } from "../support/session.js";
import { ofType, resultOf, results, starts, traceTime, truncateAfter } from "./helpers.js";
import { bigTool, buildLog, readLinesTool, slowIgnoringTool, ToolLab, touchTool, waitTool } from "./tools.js";

let ws: Workspace;
let lab: ToolLab;
beforeEach(async () => {
  ws = await tempWorkspace({ "a.txt": "one\ntwo\n" });
  lab = new ToolLab();
});
afterEach(async () => ws.cleanup());

const done = { text: "done" };

describe("experiment 1: an unknown tool is an observation, not a crash", () => {
  it("lists the available tools and the closest name, and starts nothing", async () => {
    const provider = new Recording(
      scripted({
        turns: [
          {
            calls: [
              { id: "u1", name: "find_symbol", arguments: { name: "main" } },
              { id: "u2", name: "read_files", arguments: { path: "a.txt" } },
            ],
          },
          done,
        ],
      }),
    );
    const summary = await run(ws, { provider });
    expect(summary.status).toBe("unverified");
    const all = await results(ws);
    const names = createFileTools().map((t) => t.name);
    for (const id of ["u1", "u2"]) {
      const result = resultOf(all, id);
      expect(result).toMatchObject({
        status: "invalid",
        error_type: "UNKNOWN_TOOL",
        operation_applied: false,
      });
      expect(result.data?.available).toEqual(names);
      for (const name of names) expect(result.content).toContain(name);
    }
    expect(resultOf(all, "u2").data?.closest).toBe("read_file");
    expect(resultOf(all, "u2").content).toContain('Did you mean "read_file"?');
    expect(count(await ws.journal(), "tool.started")).toBe(0);
    // The model's next request carries the observation, so it can correct itself.
    const observations = provider.requests[1]?.messages.filter((m) => m.role === "tool") ?? [];
    expect(observations.map((m) => (m.role === "tool" ? m.call_id : ""))).toEqual(["u1", "u2"]);
    expect(observations[0]?.content).toContain("UNKNOWN_TOOL");
    expect(observations[0]?.content).toContain("grep");
  });
});

describe("experiment 2: semantic validation before execution", () => {
  it("refuses start_line > end_line as invalid without running the handler", async () => {
    await run(ws, {
      tools: [readLinesTool(lab)],
      turns: [
        {
          calls: [
            { id: "r1", name: "read_lines", arguments: { path: "a.txt", start_line: 100, end_line: 10 } },
            { id: "r2", name: "read_lines", arguments: { path: "a.txt", start_line: 1, end_line: 2 } },
          ],
        },
        done,
      ],
    });
    const all = await results(ws);
    expect(resultOf(all, "r1")).toMatchObject({
      status: "invalid",
      error_type: "SEMANTIC_VALIDATION_ERROR",
      operation_applied: false,
    });
    expect(resultOf(all, "r1").content).toContain("start_line 100 is after end_line 10");
    expect(resultOf(all, "r2").status).toBe("ok");
    expect(lab.executions.map((e) => e.callId)).toEqual(["r2"]);
    expect((await starts(ws)).map((s) => s.call_id)).toEqual(["r2"]);
  });
});

describe("experiment 3: independent reads run in parallel", () => {
  const eightWaits = {
    calls: Array.from({ length: 8 }, (_, i) => ({ id: `w${i}`, name: "wait", arguments: { ms: 100 } })),
  };

  it("runs all eight in one batch with overlapping executions (pool 8)", async () => {
    await run(ws, { tools: [waitTool(lab)], turns: [eightWaits, done], limits: { poolSize: 8 } });
    const started = await starts(ws);
    expect(new Set(started.map((s) => s.batch)).size).toBe(1);
    const all = await results(ws);
    expect(all.map((r) => r.status)).toEqual(Array(8).fill("ok"));
    const latestStart = Math.max(...all.map((r) => traceTime(r, "started_at")));
    const earliestEnd = Math.min(...all.map((r) => traceTime(r, "ended_at")));
    expect(latestStart).toBeLessThan(earliestEnd);
  });

  it("runs them one after another with a pool of 1", async () => {
    await run(ws, { tools: [waitTool(lab)], turns: [eightWaits, done], limits: { poolSize: 1 } });
    const started = await starts(ws);
    expect(new Set(started.map((s) => s.batch)).size).toBe(1);
    const all = await results(ws);
    for (let i = 1; i < all.length; i++) {
      expect(traceTime(all[i]!, "started_at")).toBeGreaterThanOrEqual(traceTime(all[i - 1]!, "ended_at"));
    }
    const executions = lab.executions;
    for (let i = 1; i < executions.length; i++) {
      expect(executions[i]!.startedAt).toBeGreaterThanOrEqual(executions[i - 1]!.endedAt!);
    }
  });
});

describe("experiment 4: two edits of one file in one reply are serialized", () => {
  it("runs them in separate batches in model order; the second builds on the first", async () => {
    await run(ws, {
      turns: [
        { calls: [{ id: "read", name: "read_file", arguments: { path: "a.txt" } }] },
        {
          calls: [
            { id: "e1", name: "edit_file", arguments: { path: "a.txt", old_text: "one", new_text: "uno" } },
            // Only matches after e1 applied: proves e2 saw e1's result.
            { id: "e2", name: "edit_file", arguments: { path: "a.txt", old_text: "uno", new_text: "eins" } },
          ],
        },
        done,
      ],
    });
    const started = await starts(ws);
    const batchOf = (id: string) => started.find((s) => s.call_id === id)!.batch;
    expect(batchOf("e2")).toBeGreaterThan(batchOf("e1"));
    const all = await results(ws);
    expect(resultOf(all, "e1").status).toBe("ok");
    expect(resultOf(all, "e2").status).toBe("ok");
    // e2 started only after e1's result was durable.
    const records = await ws.journal();
    const seqOf = (type: string, id: string) =>
      records.find((r) => r.type === type && (r.data as { call_id?: string }).call_id === id)!.seq;
    expect(seqOf("tool.started", "e2")).toBeGreaterThan(seqOf("tool.result", "e1"));
    expect(await ws.file("a.txt")).toBe("eins\ntwo\n");
  });
});

describe("experiment 5: timeouts", () => {
  it("a tool that honours its signal times out and the run goes on", async () => {
    const provider = new Recording(
      scripted({
        turns: [{ calls: [{ id: "t", name: "wait", arguments: { ms: 60_000 } }] }, done],
      }),
    );
    const summary = await run(ws, { provider, tools: [waitTool(lab, { timeoutMs: 200 })] });
    expect(summary.status).toBe("unverified");
    const result = resultOf(await results(ws), "t");
    expect(result).toMatchObject({
      status: "timeout",
      error_type: "TIMEOUT",
      retryable: true,
      operation_applied: "unknown",
    });
    expect(result.data?.abandoned).toBeUndefined();
    // The model is told plainly that the call ran out of time.
    const observation = provider.requests[1]?.messages.find((m) => m.role === "tool");
    expect(observation?.content).toContain("TIMEOUT");
    expect(lab.runs("wait")).toBe(1);
  });

  it("a tool that ignores its signal is abandoned after the grace period, outcome unknown", async () => {
    const summary = await run(ws, {
      tools: [slowIgnoringTool(lab, { timeoutMs: 100 })],
      turns: [{ calls: [{ id: "s", name: "slow_ignoring", arguments: { ms: 1_500 } }] }, done],
      runtime: { settleGraceMs: 100 },
    });
    expect(summary.status).toBe("unverified");
    const result = resultOf(await results(ws), "s");
    expect(result).toMatchObject({
      status: "timeout",
      error_type: "TIMEOUT",
      operation_applied: "unknown",
      data: { abandoned: true },
    });
    // Abandoned: reported long before the handler itself finished.
    expect(lab.executions[0]?.endedAt).toBeUndefined();
  });
});

describe("experiment 6: cancellation of a running call", () => {
  it("cancels the running call, never starts the rest, and pairs every call with one result", async () => {
    const controller = new AbortController();
    lab.onStart = (execution) => {
      if (execution.callId === "long") setTimeout(() => controller.abort(), 50);
    };
    const summary = await run(ws, {
      tools: [waitTool(lab), touchTool(lab)],
      signal: controller.signal,
      turns: [
        {
          calls: [
            { id: "long", name: "wait", arguments: { ms: 10_000 } },
            { id: "later", name: "touch", arguments: { path: "marker.txt" } },
            { id: "last", name: "wait", arguments: { ms: 1 } },
          ],
        },
        done,
      ],
    });
    expect(summary.status).toBe("cancelled");
    const records = await ws.journal();
    expect(records.at(-1)?.type).toBe("run.cancelled");
    expect(ofType(records, "tool.started").map((r) => (r.data as { call_id: string }).call_id)).toEqual([
      "long",
    ]);
    const all = await results(ws);
    expect(all.map((r) => r.call_id)).toEqual(["long", "later", "last"]);
    expect(resultOf(all, "long")).toMatchObject({ status: "cancelled", error_type: "CANCELLED" });
    for (const id of ["later", "last"]) {
      expect(resultOf(all, id)).toMatchObject({
        status: "cancelled",
        error_type: "CANCELLED",
        operation_applied: false,
      });
    }
    expect(lab.executions.map((e) => e.callId)).toEqual(["long"]);
    await expect(readFile(join(ws.root, "marker.txt"))).rejects.toMatchObject({ code: "ENOENT" });
  });
});

describe("experiment 6b: cancelling a call that ignores its signal", () => {
  it("abandons it after the grace period and reports it cancelled with an unknown outcome", async () => {
    const controller = new AbortController();
    lab.onStart = () => setTimeout(() => controller.abort(), 20);
    const summary = await run(ws, {
      tools: [slowIgnoringTool(lab, { timeoutMs: 30_000 })],
      signal: controller.signal,
      turns: [{ calls: [{ id: "s", name: "slow_ignoring", arguments: { ms: 1_500 } }] }, done],
      runtime: { settleGraceMs: 100 },
    });
    expect(summary.status).toBe("cancelled");
    expect(resultOf(await results(ws), "s")).toMatchObject({
      status: "cancelled",
      error_type: "CANCELLED",
      operation_applied: "unknown",
      data: { abandoned: true },
    });
    expect(lab.executions[0]?.endedAt).toBeUndefined();
    expect((await ws.journal()).at(-1)?.type).toBe("run.cancelled");
  });
});

describe("experiment 7: a crash after the side effect is not blindly re-executed", () => {
  it("reports UNKNOWN_OUTCOME on resume and leaves the effect applied exactly once", async () => {
    const tools = [touchTool(lab)];
    const turns = [{ calls: [{ id: "t1", name: "touch", arguments: { path: "log.txt" } }] }, done];
    await run(ws, { tools, turns });
    expect(await ws.file("log.txt")).toBe("t1\n");
    // The process "died" after the effect but before its result was journaled.
    await truncateAfter(ws, (r) => r.type === "tool.started" && r.data.call_id === "t1");
    const provider = new Recording(scripted({ turns }));
    const summary = await run(ws, { tools, provider });
    expect(summary).toMatchObject({ status: "review_required", reason: "unknown_outcome" });
    expect(provider.requests).toHaveLength(0);
    expect(resultOf(await results(ws), "t1")).toMatchObject({
      status: "unknown",
      error_type: "UNKNOWN_OUTCOME",
      operation_applied: "unknown",
      requires_new_observation: true,
    });
    expect(lab.runs("touch")).toBe(1);
    expect(await ws.file("log.txt")).toBe("t1\n");
    expect(count(await ws.journal(), "tool.started")).toBe(1);
  });
});

describe("experiment 8: a 100k output becomes an artifact with a preview", () => {
  it("stores the whole output, keeps the preview within the limit and tells the model how to read on", async () => {
    const provider = new Recording(
      scripted({ turns: [{ calls: [{ id: "b", name: "big", arguments: { bytes: 100_000 } }] }, done] }),
    );
    await run(ws, { provider, tools: [bigTool(lab)], limits: { previewLimitBytes: 4_096 } });
    const result = resultOf(await results(ws), "b");
    expect(result.status).toBe("ok");
    expect(Buffer.byteLength(result.content)).toBeLessThanOrEqual(4_096);
    const expected = buildLog(100_000);
    expect(result.artifact).toEqual({ id: sha256Hex(expected), sha256: sha256Hex(expected), bytes: 100_000 });
    const stored = await readFile(
      join(ws.root, ".harness/sessions/s/artifacts", result.artifact!.id),
      "utf8",
    );
    expect(stored).toBe(expected);
    expect(expected.startsWith(result.content)).toBe(true);
    const observation = provider.requests[1]?.messages.find((m) => m.role === "tool");
    expect(observation?.content).toContain("read_artifact");
    expect(observation?.content).toContain(result.artifact!.id);
    expect(Buffer.byteLength(observation?.content ?? "")).toBeLessThan(8_192);
  });
});
