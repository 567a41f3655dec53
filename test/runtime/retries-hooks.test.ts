// Runtime retries by idempotency, and hooks at engine level through the HookRunner.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EventData } from "../../src/journal/vocabulary.js";
import { type Hook, HookRunner } from "../../src/policy/hooks.js";
import { run, tempWorkspace, type Workspace } from "../support/session.js";
import { ofType, resultOf, results } from "./helpers.js";
import { flakyTool, ToolLab, touchTool } from "./tools.js";

let ws: Workspace;
let lab: ToolLab;
beforeEach(async () => {
  ws = await tempWorkspace();
  lab = new ToolLab();
});
afterEach(async () => ws.cleanup());

const done = { text: "done" };
const fastRetry = { runtime: { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } } };

describe("runtime retries", () => {
  it("retries an idempotent tool's transient failure and records each retry", async () => {
    await run(ws, {
      tools: [flakyTool(lab, { name: "flaky", idempotency: "idempotent" })],
      turns: [{ calls: [{ id: "f", name: "flaky", arguments: { key: "k", failures: 2 } }] }, done],
      ...fastRetry,
    });
    const retries = (await ws.events("tool.retrying")).map((r) => r.data as EventData<"tool.retrying">);
    expect(retries.map((r) => [r.call_id, r.attempt, r.error_type])).toEqual([
      ["f", 1, "IO_ERROR"],
      ["f", 2, "IO_ERROR"],
    ]);
    const result = resultOf(await results(ws), "f");
    expect(result.status).toBe("ok");
    expect(result.trace?.attempts).toBe(3);
    expect(lab.runs("flaky")).toBe(3);
    // One intent, one outcome: retries are inside the call.
    expect(await ws.events("tool.started")).toHaveLength(1);
  });

  it("gives up after the attempt limit with the transient error", async () => {
    await run(ws, {
      tools: [flakyTool(lab, { name: "flaky", idempotency: "idempotent" })],
      turns: [{ calls: [{ id: "f", name: "flaky", arguments: { key: "k", failures: 5 } }] }, done],
      ...fastRetry,
    });
    expect(await ws.events("tool.retrying")).toHaveLength(2);
    expect(resultOf(await results(ws), "f")).toMatchObject({ status: "error", error_type: "IO_ERROR" });
    expect(lab.runs("flaky")).toBe(3);
  });

  it("does not start another attempt once the run is cancelled during the back-off", async () => {
    const controller = new AbortController();
    const summary = await run(ws, {
      tools: [flakyTool(lab, { name: "flaky", idempotency: "idempotent" })],
      turns: [{ calls: [{ id: "f", name: "flaky", arguments: { key: "k", failures: 1 } }] }, done],
      signal: controller.signal,
      ...fastRetry,
      extra: {
        // The user interrupts while the runtime waits to retry.
        sleep: async () => controller.abort(),
      },
    });
    expect(summary.status).toBe("cancelled");
    expect(lab.runs("flaky")).toBe(1);
    expect(await ws.events("tool.retrying")).toHaveLength(1);
    expect(resultOf(await results(ws), "f")).toMatchObject({
      status: "cancelled",
      error_type: "CANCELLED",
      data: { last_error: "IO_ERROR" },
    });
    expect((await ws.journal()).at(-1)?.type).toBe("run.cancelled");
  });

  it("never retries a non-idempotent tool", async () => {
    await run(ws, {
      tools: [flakyTool(lab, { name: "flaky_write", idempotency: "non_idempotent" })],
      turns: [{ calls: [{ id: "f", name: "flaky_write", arguments: { key: "k", failures: 2 } }] }, done],
      ...fastRetry,
    });
    expect(await ws.events("tool.retrying")).toHaveLength(0);
    const result = resultOf(await results(ws), "f");
    expect(result).toMatchObject({ status: "error", error_type: "IO_ERROR", operation_applied: "unknown" });
    expect(result.trace?.attempts).toBe(1);
    expect(lab.runs("flaky_write")).toBe(1);
  });
});

function withHooks(hooks: Hook[]) {
  return { runtime: { hooks: new HookRunner(hooks) } };
}

const touchCall = { calls: [{ id: "t", name: "touch", arguments: { path: "marker.txt" } }] };

async function markerExists(): Promise<boolean> {
  return readFile(join(ws.root, "marker.txt")).then(
    () => true,
    () => false,
  );
}

describe("hooks at engine level", () => {
  it("an admit hook that throws denies the call and is journaled before the result", async () => {
    const hook: Hook = {
      name: "gate",
      kind: "admit",
      point: "before_execute",
      timeoutMs: 1_000,
      run() {
        throw new Error("hook crashed");
      },
    };
    await run(ws, { tools: [touchTool(lab)], turns: [touchCall, done], ...withHooks([hook]) });
    const result = resultOf(await results(ws), "t");
    expect(result).toMatchObject({ status: "denied", error_type: "HOOK_DENIED", operation_applied: false });
    expect(lab.runs()).toBe(0);
    expect(await markerExists()).toBe(false);
    const records = await ws.journal();
    expect(ofType(records, "tool.started")).toHaveLength(0);
    const decided = ofType(records, "hook.decided");
    expect(decided.map((r) => r.data)).toContainEqual(
      expect.objectContaining({ call_id: "t", hook: "gate", kind: "admit", decision: "error" }),
    );
    const resultSeq = ofType(records, "tool.result")[0]!.seq;
    expect(decided.find((r) => (r.data as { hook: string }).hook === "gate")!.seq).toBeLessThan(resultSeq);
  });

  it("a notify hook that throws is contained: the call runs and the failure is journaled", async () => {
    const hook: Hook = {
      name: "observer",
      kind: "notify",
      point: "after_execute",
      timeoutMs: 1_000,
      run() {
        throw new Error("observer crashed");
      },
    };
    const summary = await run(ws, {
      tools: [touchTool(lab)],
      turns: [touchCall, done],
      ...withHooks([hook]),
    });
    expect(summary.status).toBe("unverified");
    expect(resultOf(await results(ws), "t").status).toBe("ok");
    expect(lab.runs("touch")).toBe(1);
    expect(await ws.file("marker.txt")).toBe("t\n");
    const decided = (await ws.events("hook.decided")).map((r) => r.data);
    expect(decided).toContainEqual(
      expect.objectContaining({ call_id: "t", hook: "observer", kind: "notify", decision: "error" }),
    );
  });

  it("a wrap hook that never calls next executes nothing and is reported as a violation", async () => {
    const hook: Hook = {
      name: "swallower",
      kind: "wrap",
      timeoutMs: 1_000,
      async run() {
        return { summary: "forged", content: "forged" };
      },
    };
    await run(ws, { tools: [touchTool(lab)], turns: [touchCall, done], ...withHooks([hook]) });
    const result = resultOf(await results(ws), "t");
    expect(result).toMatchObject({
      status: "error",
      error_type: "HOOK_VIOLATION",
      data: { executed: false },
    });
    // Nothing ran, so nothing was applied.
    expect(result.operation_applied).toBe(false);
    expect(result.content).not.toContain("forged");
    expect(lab.runs()).toBe(0);
    expect(await markerExists()).toBe(false);
  });

  it("an allowing admit hook never turns a policy deny into an allow", async () => {
    let consulted = 0;
    const hook: Hook = {
      name: "yes-man",
      kind: "admit",
      point: "before_execute",
      timeoutMs: 1_000,
      run() {
        consulted += 1;
        return { decision: "allow" };
      },
    };
    await run(ws, {
      tools: [touchTool(lab)],
      turns: [touchCall, done],
      readOnly: true,
      ...withHooks([hook]),
    });
    expect(resultOf(await results(ws), "t")).toMatchObject({ status: "denied", error_type: "POLICY_DENIED" });
    expect(lab.runs()).toBe(0);
    expect(consulted).toBe(0);
    expect(await markerExists()).toBe(false);
    expect(await ws.events("tool.started")).toHaveLength(0);
  });
});
