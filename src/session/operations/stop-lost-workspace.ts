import { SessionState } from "../../engine/state.js";
import type { JournalStore } from "../../journal/store.js";

export interface LostWorkspaceReport {
  /** false: the journal already ends stopped for this reason (a worker died before reporting it). */
  appended: boolean;
}

/**
 * Stop a started session whose copied or cloned workspace was only on a dead worker's disk (the
 * fleet): it is never started again from a fresh copy, a person reviews it. Decided on the records
 * read under the writer lock: a journal that already ends with this stop gets no second one.
 */
export async function stopForLostWorkspace(
  store: JournalStore,
  sessionId: string,
  where: string | null,
): Promise<LostWorkspaceReport> {
  const writer = await store.openWriter(sessionId, { create: false });
  try {
    const outcome = SessionState.from(await writer.readAll()).outcome;
    if (outcome?.kind === "stopped" && outcome.data.reason === "workspace_lost") return { appended: false };
    await writer.append([
      {
        type: "run.stopped",
        data: {
          status: "review_required",
          reason: "workspace_lost",
          message:
            `the session's workspace was materialized on ${where ?? "another worker"}, which no longer runs it; ` +
            "it is not started again from a fresh copy (its effects so far would be lost or repeated): review it",
        },
      },
    ]);
    return { appended: true };
  } finally {
    await writer.close();
  }
}
