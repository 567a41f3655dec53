import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import type { ArtifactStore } from "../../artifacts/store.js";
import type { EventData } from "../../journal/vocabulary.js";
import type { PermissionDecision, PermissionPort } from "../../runtime/ports.js";
import { sha256Hex } from "../../shared/hash.js";
import type { WorkspaceFs } from "../../workspace/fs.js";
import {
  type ChangeSet,
  type Entry,
  isFile,
  isLink,
  manifestJson,
  parseManifest,
} from "../../workspace/manifest.js";
import { IGNORE_NOTICES } from "../notice.js";
import { keptObjects, type OpenedWorkspace, openWorkspace } from "../workspace.js";
import { type ChildChange, childChanges } from "./child-changes.js";
import { mergeChanges } from "./merge.js";
import { copyWorkspace } from "./workspace-copy.js";

export type AgentChange = EventData<"agent.finished">["changes"][number];

/** Where a child works: its workspace, what it changed there, and its removal once merged. */
export interface ChildWorkspace {
  opened: OpenedWorkspace;
  isolation: "copy" | "shared";
  /**
   * What the child changed against its base, with the entries a merge needs (none for a shared
   * child: it cannot write). A full walk of the copy: take it once per child.
   */
  raw(): Promise<ChildChange[]>;
  /** A file's content in the child's base, by hash, when the parent's record kept it. */
  base(hash: string): Uint8Array | undefined;
  remove(): Promise<void>;
}

/**
 * The directory a child's copy lives in: outside the parent's workspace and its `.harness` (a
 * workspace inside harness's state directory is refused, and the parent's tools must never reach
 * a child's files), under the user's state directory, at a place derived from the parent's root
 * and the child's id, so a resume after a crash finds it again.
 */
export function copyDirectory(
  parent: OpenedWorkspace,
  childId: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const base =
    env.HARNESS_AGENTS_DIR ??
    join(env.XDG_STATE_HOME ?? join(homedir(), ".local", "state"), "harness", "agents");
  return join(base, sha256Hex(`${parent.root}\0${childId}`).slice(0, 32));
}

/**
 * A new child's workspace. `copy`: a private copy of the parent's tree as it is now (untracked
 * files included, `.harness` excluded; never hard links, so nothing the child does, an in-place
 * append included, reaches the parent's files), its base manifest kept beside it for the merge
 * and for a resume. `shared`: the parent's own workspace, which the child's grant lets it read only.
 */
export async function childWorkspace(
  parent: OpenedWorkspace,
  childId: string,
  isolation: "copy" | "shared",
  signal: AbortSignal,
  env?: NodeJS.ProcessEnv,
): Promise<ChildWorkspace> {
  if (isolation === "shared") return shared(parent);
  const dir = copyDirectory(parent, childId, env);
  // What a crash left before the child was journaled as started: nothing refers to it.
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const copy = await copyWorkspace(parent.root, join(dir, "tree"), { signal });
  await writeFile(join(dir, "base.json"), manifestJson(copy.base), { mode: 0o600 });
  return copied(
    dir,
    withSessionsOf(parent, await openWorkspace(copy.root, { notify: IGNORE_NOTICES })),
    keptObjects(parent),
  );
}

/** The workspace of a child journaled as started (a resume): its copy as the crash left it. */
export async function openChildWorkspace(
  parent: OpenedWorkspace,
  childId: string,
  isolation: "copy" | "shared",
  env?: NodeJS.ProcessEnv,
): Promise<ChildWorkspace> {
  if (isolation === "shared") return shared(parent);
  const dir = copyDirectory(parent, childId, env);
  return copied(
    dir,
    withSessionsOf(parent, await openWorkspace(join(dir, "tree"), { notify: IGNORE_NOTICES })),
    keptObjects(parent),
  );
}

/**
 * The copy as a child session's workspace, with its session folder (artifacts) where its journal
 * is: under the parent's session folder, so a child's record outlives its copy and verifies
 * with its parent's.
 */
function withSessionsOf(parent: OpenedWorkspace, copy: OpenedWorkspace): OpenedWorkspace {
  return { ...copy, sessionDir: (sessionId) => parent.sessionDir(sessionId) };
}

function shared(parent: OpenedWorkspace): ChildWorkspace {
  return {
    opened: parent,
    isolation: "shared",
    raw: async () => [],
    base: () => undefined,
    remove: async () => undefined,
  };
}

/** `kept`: the parent's record's copies of file contents (the base side of each line count). */
function copied(
  dir: string,
  opened: OpenedWorkspace,
  kept: (hash: string) => Uint8Array | undefined,
): ChildWorkspace {
  const raw = async () =>
    childChanges(
      { root: opened.root, base: parseManifest(await readFile(join(dir, "base.json"))) },
      { contents: kept },
    );
  return {
    opened,
    isolation: "copy",
    raw,
    base: kept,
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A change as the parent's journal records it: versions are file hashes (null: absent, or not a file). */
export function recordedChange(change: ChildChange): AgentChange {
  return {
    path: change.path,
    base_version: versionOfEntry(change.before),
    new_version: versionOfEntry(change.after),
    added: change.added,
    removed: change.removed,
  };
}

function versionOfEntry(entry: Entry | null): string | null {
  if (entry === null) return null;
  if (isFile(entry)) return entry.hash;
  if (isLink(entry)) return `link:${entry.link}`;
  return null;
}

/**
 * Merge a copy child's changes into the parent's workspace: each file only if this session's
 * policy would let it write that file (a child's shell may have touched files the parent's rules
 * deny it), then compare-and-swap against the version the child's base had; a file changed
 * here since is a conflict, left alone. Run again after a crash, it writes nothing twice.
 */
export async function mergeBack(
  workspace: ChildWorkspace,
  /** The child's changes as scanned (`raw`), and the paths of them to merge. */
  scanned: readonly ChildChange[],
  recorded: readonly AgentChange[],
  parent: { fs: WorkspaceFs; artifacts: ArtifactStore; permissions: PermissionPort },
  options: { attributeAlready?: boolean; journaled?: ReadonlySet<string> } = {},
): Promise<{ change?: ChangeSet; applied: string[]; conflicts: { path: string; reason: string }[] }> {
  const wanted = new Set(recorded.map((change) => change.path));
  const all = scanned.filter((change) => wanted.has(change.path));
  const conflicts: { path: string; reason: string }[] = [];
  const allowed: ChildChange[] = [];
  for (const change of all) {
    const decision = await mergeDecision(parent.permissions, change);
    if (decision.decision === "allow") allowed.push(change);
    else
      conflicts.push({
        path: change.path,
        reason: `this session's policy does not let it write the file (${decision.decision}: ${decision.rule ?? decision.source})`,
      });
  }
  const outcome = await mergeChanges({
    fs: parent.fs,
    artifacts: parent.artifacts,
    copyRoot: workspace.opened.root,
    changes: allowed,
  });
  conflicts.push(...outcome.conflicts);
  const journaled = options.journaled ?? new Set<string>();
  const unjournaled = (entry: { path: string }) => !journaled.has(entry.path);
  const change = options.attributeAlready
    ? joined(outcome.change, {
        created: outcome.alreadyChange.created.filter(unjournaled),
        modified: outcome.alreadyChange.modified.filter(unjournaled),
        deleted: outcome.alreadyChange.deleted.filter(unjournaled),
      })
    : outcome.change;
  const empty = change.created.length + change.modified.length + change.deleted.length === 0;
  return {
    ...(empty ? {} : { change }),
    applied: [...outcome.applied, ...outcome.already],
    conflicts: conflicts.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
  };
}

/**
 * Whether this session's policy lets a merge write a path: as write_file would, and, for a file
 * that exists (a change to it), as edit_file would too: a rule on either tool holds a merge back.
 */
async function mergeDecision(permissions: PermissionPort, change: ChildChange): Promise<PermissionDecision> {
  const write = await permissions.decide({
    tool: "write_file",
    effect: "local_write",
    arguments: { path: change.path, content: "" },
  });
  if (change.before === null || write.decision !== "allow") return write;
  return permissions.decide({
    tool: "edit_file",
    effect: "local_write",
    arguments: { path: change.path, old_text: "", new_text: "" },
  });
}

function joined(a: ChangeSet, b: ChangeSet): ChangeSet {
  const sorted = <T extends { path: string }>(list: T[]) =>
    list.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
  return {
    created: sorted([...a.created, ...b.created]),
    modified: sorted([...a.modified, ...b.modified]),
    deleted: sorted([...a.deleted, ...b.deleted]),
  };
}
