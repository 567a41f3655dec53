import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModelRequest, Provider } from "../../src/providers/provider.js";
import type { HookCallContext, HookPort } from "../../src/runtime/ports.js";
import { createFileTools } from "../../src/tools/builtin.js";
import { ToolLab, waitTool } from "../runtime/tools.js";
import { run, scripted, tempWorkspace, type Workspace } from "../support/session.js";

/**
 * Two fsyncs per step: a reply with calls is written with its first batch's tool.started, a
 * batch's last results with the next model.started. What must stay true is checked against the
 * journal on disk at the moment it matters: when a handler runs, when a request is sent, when a
 * hook sees a call, when the listener is shown a record.
 */

const STEPS = 10;

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace();
});
afterEach(async () => {
  await ws.cleanup();
});

interface DiskRecord {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

/** What a crash at this instant would leave: the journal's lines on disk. */
function onDisk(session = "s"): DiskRecord[] {
  let text: string;
  try {
    text = readFileSync(join(ws.root, ".harness", "sessions", session, "events.jsonl"), "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as DiskRecord);
}

/** A model that waits 0 ms in each of STEPS steps, then answers. */
function waiter(): Provider {
  return scripted({
    script: (_messages, step) =>
      step < STEPS ? { calls: [{ id: `w-${step}`, name: "wait", arguments: { ms: 0 } }] } : { text: "done" },
  });
}

/** Wraps a provider: at each request, what the store has synced and what the disk holds. */
class Observed implements Provider {
  readonly seen: { fsyncs: number; disk: DiskRecord[]; request: ModelRequest }[] = [];
  constructor(
    private readonly inner: Provider,
    private readonly fsyncs: () => number,
  ) {}
  get identity() {
    return this.inner.identity;
  }
  stream(request: ModelRequest, signal: AbortSignal) {
    this.seen.push({ fsyncs: this.fsyncs(), disk: onDisk(), request });
    return this.inner.stream(request, signal);
  }
}

describe("durable appends per step", () => {
  it("a 10-step session makes exactly two fsyncs per step, and each request leaves only after its inputs are durable", async () => {
    const lab = new ToolLab();
    const atExecution: { callId: string; disk: DiskRecord[] }[] = [];
    lab.onStart = (execution) => atExecution.push({ callId: execution.callId, disk: onDisk() });
    const model = new Observed(waiter(), () => ws.store.syncs.fsyncs);
    const shownWhileDurable: boolean[] = [];
    const summary = await run(ws, {
      provider: model,
      tools: [...createFileTools(), waitTool(lab)],
      extra: { listener: { record: (record) => shownWhileDurable.push(onDisk().length > record.seq) } },
    });
    expect(summary.status).toBe("unverified");
    expect(lab.runs("wait")).toBe(STEPS);

    // Counted, not inferred: the store's fsyncs between one request and the next.
    const perStep = model.seen.slice(1).map((s, i) => s.fsyncs - model.seen[i]!.fsyncs);
    expect(perStep).toEqual(Array.from({ length: STEPS }, () => 2));

    // A request leaves the process only once its model.started and every result it carries are on disk.
    for (const [step, { disk, request }] of model.seen.entries()) {
      expect(disk.at(-1)).toMatchObject({ type: "model.started", data: { step } });
      if (step > 0) {
        expect(disk.at(-2)).toMatchObject({ type: "tool.result", data: { call_id: `w-${step - 1}` } });
        expect(request.messages.at(-1)).toMatchObject({ role: "tool", call_id: `w-${step - 1}` });
      }
    }
    // Nothing runs from a reply that is not durable: reply and intent are on disk first, in that order.
    expect(atExecution).toHaveLength(STEPS);
    for (const { callId, disk } of atExecution) {
      const tail = disk.slice(-3).map((r) => r.type);
      expect(tail).toEqual(["model.started", "model.reply", "tool.started"]);
      expect(disk.at(-1)?.data.call_id).toBe(callId);
    }
    // The listener (--events, an MCP client, progress) is shown a record only once it is durable.
    expect(shownWhileDurable.length).toBe((await ws.journal()).length);
    expect(shownWhileDurable.every(Boolean)).toBe(true);
  });

  it("a hook sees a call only once the reply holding it is durable", async () => {
    const lab = new ToolLab();
    const seenByHooks: { point: string; disk: DiskRecord[] }[] = [];
    const look = (point: string, context: HookCallContext) =>
      seenByHooks.push({ point: `${point}:${context.callId}`, disk: onDisk() });
    const hooks: HookPort = {
      async notify(point, context) {
        look(point, context);
        return [];
      },
      async admit(point, context) {
        look(point, context);
        return { allowed: true, records: [] };
      },
      async wrap(_context, execute) {
        return { status: "ok", value: await execute(), records: [] };
      },
    };
    const summary = await run(ws, {
      provider: waiter(),
      tools: [...createFileTools(), waitTool(lab)],
      runtime: { hooks },
    });
    expect(summary.status).toBe("unverified");
    expect(seenByHooks.length).toBeGreaterThanOrEqual(STEPS);
    for (const { point, disk } of seenByHooks) {
      const callId = point.split(":")[1];
      const replies = disk.filter((r) => r.type === "model.reply");
      const calls = replies.flatMap((r) => (r.data.calls as { id: string }[]).map((c) => c.id));
      expect({ point, durable: calls.includes(callId ?? "") }).toEqual({ point, durable: true });
    }
  });
});
