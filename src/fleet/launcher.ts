import { liveExport, withLiveExport } from "../otel/enabled.js";
import { EngineSession } from "../session/handle.js";
import { noticeLine, type SessionNotice } from "../session/notice.js";
import { prepareSession } from "../session/prepare.js";
import { harnessVersion } from "../session/version.js";
import { openWorkspace } from "../session/workspace.js";
import { queueQuota } from "./quota.js";
import { taskConfig } from "./task-config.js";
import type { SessionLauncher } from "./worker.js";

/**
 * A queued session run the way every door runs one: the task's options as a SessionConfig,
 * set up by prepareSession (the recorded options win on a resume), run through the session
 * handle; only the journal differs (PostgreSQL, under the worker's lease).
 */
export function launchSession(
  log: (line: string) => void,
  options: {
    /** The queue whose quota (`queue:NAME`) every model request reserves against; none: no quota. */
    quota?: string;
  } = {},
): SessionLauncher {
  return async ({ task, root, store, signal, lost, database }) => {
    const config = taskConfig(task.options);
    const note = (line: string) => log(`session ${task.session}: ${line}`);
    const notify = (notice: SessionNotice) => note(noticeLine(notice));
    const workspace = await openWorkspace(root, { notify });
    // Fail closed: a quota asked for is never skipped for want of its database.
    if (options.quota !== undefined && database === undefined)
      throw new Error(`quota ${options.quota}: the launcher was given no database`);
    const quota =
      options.quota !== undefined && database !== undefined
        ? queueQuota(database, options.quota, note)
        : undefined;
    const prepared = await prepareSession(config, {
      workspace,
      sessionId: task.session,
      store,
      // A worker has nobody to ask: write and shell default to deny.
      interactive: false,
      mcp: note,
      notify,
      // Given to the setup, not set on the run after it: the session's sub-agents share it.
      ...(quota !== undefined ? { quota } : {}),
    });
    // OpenTelemetry, only when an endpoint is configured (the SDK is not even loaded otherwise).
    const live = await liveExport(task.session, harnessVersion());
    const session = new EngineSession(prepared.run, prepared.records.length > 0, {
      signal,
      listener: withLiveExport({}, live),
    });
    // A session the worker resumes goes on with its own goal; a new one starts with the task's.
    const turn = prepared.records.length > 0 ? session.resume() : session.turn(task.goal);
    // The lease is gone (or the worker stops hard): kill the process trees of running calls now,
    // not at the next safe point; the fence already refuses any further append.
    const kill = () => turn.exitNow();
    lost.addEventListener("abort", kill, { once: true });
    try {
      const summary = await turn.done;
      return { status: summary.status };
    } finally {
      lost.removeEventListener("abort", kill);
      await session.close();
      await live?.shutdown();
    }
  };
}
