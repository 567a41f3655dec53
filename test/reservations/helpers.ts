import { MemoryArtifactStore } from "../../src/artifacts/memory-store.js";
import { ReservationDb } from "../../src/packs/reservations/database.js";
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
