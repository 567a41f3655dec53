import { stat } from "node:fs/promises";
import { join } from "node:path";
import { EVENTS_FILE } from "../journal/session-path.js";
import type { OpenedWorkspace } from "../session/workspace.js";

/**
 * The workspace's session with the latest activity (its journal's modification time; ids break
 * ties), for `harness run --continue`. Undefined when the workspace has none.
 */
export async function latestSession(workspace: OpenedWorkspace): Promise<string | undefined> {
  let latest: { id: string; time: number } | undefined;
  for (const id of await workspace.store.list()) {
    const info = await stat(join(workspace.sessionDir(id), EVENTS_FILE)).catch(() => undefined);
    if (info === undefined) continue;
    const time = info.mtimeMs;
    if (latest === undefined || time > latest.time || (time === latest.time && id > latest.id))
      latest = { id, time };
  }
  return latest?.id;
}
