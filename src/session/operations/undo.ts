import { join } from "node:path";
import { FileArtifactStore } from "../../artifacts/file-store.js";
import { runUndo, type UndoReport } from "../../undo/apply.js";
import { type UndoTarget, UndoTargetError } from "../../undo/plan.js";
import { UsageError } from "../usage-error.js";
import { keptObjects, type OpenedWorkspace } from "../workspace.js";

/** Undo a session of this workspace under its writer lock (harness undo, the chat's /undo). */
export async function undoSession(
  workspace: OpenedWorkspace,
  sessionId: string,
  target: UndoTarget,
  dryRun: boolean,
): Promise<UndoReport> {
  const writer = await workspace.store.openWriter(sessionId, { create: false });
  try {
    const artifacts = new FileArtifactStore(join(workspace.sessionDir(sessionId), "artifacts"));
    const kept = keptObjects(workspace);
    return await runUndo({ root: workspace.root, writer, artifacts, kept, target, dryRun });
  } catch (error) {
    if (error instanceof UndoTargetError) throw new UsageError(error.message);
    throw error;
  } finally {
    await writer.close();
  }
}
