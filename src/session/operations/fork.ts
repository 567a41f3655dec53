import { cp } from "node:fs/promises";
import { join } from "node:path";
import { forkSession } from "../../engine/fork.js";
import type { OpenedWorkspace } from "../workspace.js";

/**
 * Fork a workspace's session (harness fork, the chat's /fork): the journal, and the artifacts its
 * history points to (previews' full output, pruned results), copied beside it.
 */
export async function forkWithArtifacts(
  workspace: OpenedWorkspace,
  parent: string,
  child: string,
  at: number | undefined,
  /** The fork's own workspace (harness fork --into): its journal and artifacts live there. */
  into?: OpenedWorkspace,
): Promise<Awaited<ReturnType<typeof forkSession>>> {
  const home = into ?? workspace;
  const forked = await forkSession(
    workspace.store,
    parent,
    child,
    at,
    into ? { store: into.store, workspace: into.identity } : undefined,
  );
  await cp(join(workspace.sessionDir(parent), "artifacts"), join(home.sessionDir(child), "artifacts"), {
    recursive: true,
    errorOnExist: false,
    force: false,
  }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") throw error;
  });
  return forked;
}
