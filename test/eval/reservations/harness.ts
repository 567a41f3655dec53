import { MemoryArtifactStore } from "../../../src/artifacts/memory-store.js";
import type { RunSummary } from "../../../src/engine/options.js";
import {
  type ReservationSessionOptions,
  runReservationTask,
} from "../../../src/eval/suites/reservations/session.js";
import { type DecisionPolicy, scriptFor } from "../../../src/eval/suites/reservations/workflow.js";
import { MemoryJournalStore } from "../../../src/journal/memory-store.js";
import type { AnyRecord } from "../../../src/journal/vocabulary.js";
import type { ReservationDb } from "../../../src/packs/reservations/database.js";
import { parseTask, type ReservationTask } from "../../../src/packs/reservations/task.js";
import { ScriptedProvider } from "../../../src/providers/scripted/provider.js";
import { MemoryWorkspaceFs } from "../../../src/workspace/memory-fs.js";
import { freshDb } from "../../reservations/helpers.js";

export function makeTask(over: Partial<ReservationTask> = {}): ReservationTask {
  return parseTask({
    id: "t",
    query: "camera",
    mode: "reserve",
    quantity: 1,
    allow_write: true,
    max_tool_calls: 8,
    ...over,
  });
}

export interface Harness {
  db: ReservationDb;
  store: MemoryJournalStore;
  run(policy: DecisionPolicy, extra?: Partial<ReservationSessionOptions>): Promise<RunSummary>;
  records(): Promise<AnyRecord[]>;
  results(name: string): Promise<Extract<AnyRecord, { type: "tool.result" }>["data"][]>;
  starts(name: string): Promise<number>;
}

/** One reservation task on a fresh database and an in-memory journal. */
export function reservationHarness(task: ReservationTask): Harness {
  const db = freshDb();
  const backend = new MemoryJournalStore();
  const stockBefore = db.stockLevels();
  const records = () => backend.read(task.id);
  return {
    db,
    store: backend,
    run: (policy, extra = {}) =>
      runReservationTask({
        task,
        db,
        provider: ScriptedProvider.fromFunction(scriptFor(policy), "test-policy"),
        store: backend,
        fs: new MemoryWorkspaceFs(),
        artifacts: new MemoryArtifactStore(),
        workspace: { name: "test", fingerprint: "0".repeat(64) },
        stockBefore,
        ...extra,
      }),
    records,
    async results(name) {
      return (await records()).flatMap((r) =>
        r.type === "tool.result" && r.data.name === name ? [r.data] : [],
      );
    },
    async starts(name) {
      return (await records()).filter((r) => r.type === "tool.started" && r.data.name === name).length;
    },
  };
}
