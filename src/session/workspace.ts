import { randomBytes } from "node:crypto";
import { accessSync, constants } from "node:fs";
import { mkdir, realpath, stat } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { FileJournalStore } from "../journal/file-store.js";
import { prepareStateDir } from "../journal/state-dir.js";
import { settleGuards } from "../sandbox/absent-guard.js";
import { errnoCode } from "../shared/errno.js";
import { sha256Hex } from "../shared/hash.js";
import { DiskWorkspaceFs } from "../workspace/disk-fs.js";
import { enclosingStateDir } from "../workspace/enclosing-state.js";
import { excludeStateDirFromGit } from "../workspace/git-exclude.js";
import { TreeSnapshot } from "../workspace/tree-snapshot.js";
import type { Notify } from "./notice.js";
import { UsageError } from "./usage-error.js";

export interface OpenedWorkspace {
  /** Real absolute path (for the CLI's own output; never journaled). */
  root: string;
  fs: DiskWorkspaceFs;
  harnessDir: string;
  store: FileJournalStore;
  /** What the journal records: a name and a fingerprint, never the host path. */
  identity: { name: string; fingerprint: string };
  sessionDir(sessionId: string): string;
}

export async function openWorkspace(
  dir: string | undefined,
  options: {
    /** Where the notice of a settled guard goes: the library prints nothing itself. */
    notify: Notify;
    create?: boolean;
    /**
     * `dir` is a real path someone checked (harness serve's admission): it must still be the
     * workspace's real path, else nothing is created or opened (a directory on the way was
     * swapped for a link after the check).
     */
    exact?: boolean;
  },
): Promise<OpenedWorkspace> {
  const requested = resolve(dir ?? process.cwd());
  if (options.create) await mkdir(requested, { recursive: true });
  const info = await stat(requested).catch(() => undefined);
  if (!info)
    throw new UsageError(`workspace ${requested} does not exist (create it, or pass --workspace DIR)`);
  if (!info.isDirectory()) throw new UsageError(`workspace ${requested} is not a directory`);
  const root = await realpath(requested);
  if (options.exact && root !== requested)
    throw new UsageError(
      `workspace ${requested} changed while it was being opened (a directory on its path became a link); nothing was opened`,
    );
  // A workspace made of another workspace's journals and artifacts would hand them to every tool.
  const state = enclosingStateDir(root);
  if (state !== undefined)
    throw new UsageError(
      `workspace ${requested} lies inside harness's state directory ${state}; choose a directory outside it`,
    );
  const harnessDir = join(root, ".harness");
  if (readOnlyDirectory(harnessDir))
    throw new UsageError(
      `workspace ${requested}: its .harness directory is read-only here, so no session can be recorded. ` +
        "Inside harness's sandbox (a shell call of another harness run) that run's .harness is hidden and read-only: " +
        "give this harness a workspace of its own, such as a subdirectory (--workspace DIR)",
    );
  // Refuses a shipped .harness holding symlinks (they would lead harness's writes elsewhere).
  prepareStateDir(harnessDir);
  // `.harness/` stays out of `git status` through the repository's own info/exclude, never .gitignore.
  excludeStateDirFromGit(root);
  // Before anything reads the project config: what a sandboxed command of a harness that was
  // killed mid-command created at a protected name is moved away (src/sandbox/absent-guard.ts).
  for (const moved of settleGuards(root)) {
    const message = `${moved.path} was created by a sandboxed command while it was protected; moved to ${moved.movedTo}`;
    options.notify({ level: "warning", message });
  }
  const fs = await DiskWorkspaceFs.create(root);
  return {
    root,
    fs,
    harnessDir,
    store: new FileJournalStore(harnessDir),
    identity: { name: basename(root), fingerprint: sha256Hex(root) },
    sessionDir: (sessionId) => join(harnessDir, "sessions", sessionId),
  };
}

/** Whether `dir` is a directory on a read-only mount (EROFS), as `.harness` is inside the sandbox. */
function readOnlyDirectory(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return false;
  } catch (error) {
    return errnoCode(error) === "EROFS";
  }
}

/** The workspace recording's kept copies of file contents (`.harness/objects`), each checked against its hash. */
export function keptObjects(workspace: OpenedWorkspace): (hash: string) => Uint8Array | undefined {
  const snapshot = new TreeSnapshot({ root: workspace.root, stateDir: workspace.harnessDir });
  return (hash) => snapshot.object(hash);
}

/**
 * A sortable, unique, readable session id: 20261130-064233-a1b2c3d4. 32 random bits after the
 * second: a server starting hundreds of sessions a second must not hand two of them one id.
 */
export function newSessionId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `${stamp}-${randomBytes(4).toString("hex")}`;
}
