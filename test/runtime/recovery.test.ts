// Process supervision at engine level: spawns are journaled while a call runs, and a resume kills
// the survivors of exactly the calls that never settled.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type ProcessSupervision, SpawnJournal } from "../../src/engine/recovery.js";
import { defineTool } from "../../src/tools/tool.js";
import { run, tempWorkspace, type Workspace } from "../support/session.js";
import { ofType, resultOf, results, truncateAfter } from "./helpers.js";

let ws: Workspace;
beforeEach(async () => {
  ws = await tempWorkspace();
});
afterEach(async () => ws.cleanup());

interface KillRequest {
  pgid: number;
  bootId: string;
  startTicks: number;
}

function supervision(killed: number) {
  const requests: KillRequest[] = [];
  const journal = new SpawnJournal();
  const processes: ProcessSupervision = {
    journal,
    async killSurvivors(spawn) {
      requests.push(spawn);
      return killed;
    },
  };
  return { processes, requests, journal };
}

/** A process-running tool double: reports a spawn through the journal hook, then finishes. */
function spawningTool(journal: SpawnJournal, pgid: number) {
  return defineTool({
    name: "spawner",
    description: "Pretend to start a process group and report it (test tool).",
    version: "1",
    input: z.strictObject({}),
    effect: "process_execution",
    idempotency: "non_idempotent",
    timeoutMs: 5_000,
    resources: () => ({ exclusive: true }),
    concurrencySafe: () => false,
    async execute(_args, context) {
      await journal.onSpawn({
        callId: context.callId,
        pid: pgid,
        pgid,
        bootId: "boot",
        startTicks: 42,
        sandboxed: false,
      });
      return { summary: "spawned", content: "spawned" };
    },
  });
}

describe("process supervision", () => {
  it("journals each spawn between the call's start and its result", async () => {
    const { processes, journal } = supervision(0);
    await run(ws, {
      tools: [spawningTool(journal, 4242)],
      extra: { processes, policy: allowAll() },
      turns: [{ calls: [{ id: "p", name: "spawner", arguments: {} }] }, { text: "done" }],
    });
    const records = await ws.journal();
    const types = records.filter((r) => r.type.startsWith("tool.") || r.type === "process.spawned");
    expect(types.map((r) => r.type)).toEqual(["tool.started", "process.spawned", "tool.result"]);
    expect(ofType(records, "process.spawned")[0]?.data).toMatchObject({
      call_id: "p",
      pgid: 4242,
      boot_id: "boot",
      start_ticks: 42,
    });
  });

  it("on resume, kills the recorded group of the call that never settled and says so", async () => {
    const first = supervision(0);
    const tools = [spawningTool(first.journal, 777)];
    const turns = [
      { calls: [{ id: "p", name: "spawner", arguments: {} }] },
      { calls: [{ id: "q", name: "spawner", arguments: {} }] },
      { text: "done" },
    ];
    await run(ws, { tools, turns, extra: { processes: first.processes, policy: allowAll() } });
    // Crash: cut the journal right after q's spawn was recorded.
    await truncateAfter(ws, (r) => r.type === "process.spawned" && r.data.call_id === "q");

    const second = supervision(3);
    const summary = await run(ws, {
      tools: [spawningTool(second.journal, 777)],
      turns,
      extra: { processes: second.processes, policy: allowAll() },
    });
    expect(summary).toMatchObject({ status: "review_required", reason: "unknown_outcome" });
    // Only q's group: p settled before the crash.
    expect(second.requests).toEqual([{ pgid: 777, bootId: "boot", startTicks: 42 }]);
    const result = resultOf(await results(ws), "q");
    expect(result).toMatchObject({
      status: "unknown",
      error_type: "UNKNOWN_OUTCOME",
      data: { killed_processes: 3 },
    });
    expect(result.content).toContain("3 surviving process(es)");
  });
});

/** A policy that allows everything, so the double needs no approver. */
function allowAll() {
  return {
    describe: { allow: "all" },
    digest: "a".repeat(64),
    permissions: {
      decide: () => ({ decision: "allow" as const, source: "test", reason: "allowed in tests" }),
    },
  };
}
