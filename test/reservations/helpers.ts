import { MemoryArtifactStore } from "../../src/artifacts/memory-store.js";
import { ReservationDb } from "../../src/packs/reservations/database.js";
import { deriveKey, parseTask, type ReservationTask } from "../../src/packs/reservations/task.js";
import type { HistoryEntry } from "../../src/runtime/ports.js";
import type { JsonObject } from "../../src/shared/json.js";
import { createToolContext } from "../../src/tools/context.js";
import type { ToolContext } from "../../src/tools/tool.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";

/** A fresh in-memory database holding the fixed catalog (camera 3, microscope 2, tripod 4). */
export function freshDb(): ReservationDb {
  return ReservationDb.fixture(":memory:", undefined, { now: () => new Date("2026-01-02T03:04:05.000Z") });
}

export function toolContext(): ToolContext {
  return createToolContext({
    callId: "test-call",
    fs: new MemoryWorkspaceFs(),
    artifacts: new MemoryArtifactStore(),
  });
}

/** A task that may reserve one camera. */
export const CAMERA_TASK = parseTask({
  id: "reserve-camera",
  query: "camera",
  mode: "reserve",
  quantity: 1,
  allow_write: true,
  max_tool_calls: 8,
});

/** The observations that authorize reserving it: a unique search hit, its document, its stock. */
export const searched: HistoryEntry = {
  call_id: "c0",
  name: "search",
  arguments: { query: "camera" },
  status: "ok",
  data: {
    outcome: "unique",
    query: "camera",
    hits: [{ id: "camera", title: "Mirrorless camera kit", snippet: "" }],
  },
};
export const documented: HistoryEntry = {
  call_id: "c1",
  name: "document",
  arguments: { item_id: "camera" },
  status: "ok",
  data: { item_id: "camera" },
};
export const stocked: HistoryEntry = {
  call_id: "c2",
  name: "stock",
  arguments: { item_id: "camera" },
  status: "ok",
  data: { item_id: "camera", available: 3, revision: 0 },
};
export const FULL = [searched, documented, stocked];

/** Reserve arguments that fit every observation, but for `over`. */
export function reserveArgs(over: JsonObject = {}, forTask: ReservationTask = CAMERA_TASK): JsonObject {
  return {
    item_id: "camera",
    quantity: 1,
    expected_revision: 0,
    idempotency_key: deriveKey(forTask, "camera", 1),
    ...over,
  };
}
