import { randomBytes } from "node:crypto";
import {
  closeSync,
  fchmodSync,
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  unlinkSync,
} from "node:fs";
import path from "node:path";
import type { ArtifactStore } from "../../artifacts/store.js";
import { errnoCode } from "../../shared/errno.js";
import { sha256Hex } from "../../shared/hash.js";
import { BeneathError, type HeldDir, openParent, readFileBeneath } from "../../workspace/beneath.js";
import { quote } from "../../workspace/boundary.js";
import { DiskWorkspaceFs } from "../../workspace/disk-fs.js";
import { withFileLock } from "../../workspace/file-lock.js";
import { RESERVED_DIR, WorkspaceError, type WorkspaceFs } from "../../workspace/fs.js";
import {
  byPath,
  type ChangeSet,
  DIR,
  type Entry,
  type FileEntry,
  isDir,
  isFile,
  isLink,
  isManifestPath,
  isUnread,
  sameEntry,
} from "../../workspace/manifest.js";
import type { ChildChange } from "./child-changes.js";

/**
 * Merge a writing child's changes into its parent's workspace, file by file, compare-and-swap.
 *
 * A path is changed only if the parent's entry there is still the child's `before` (absent for a
 * create), and the change itself checks again when it commits: a file is written by
 * `writeFileAtomic` with the expected version; a delete first moves the file aside under the same
 * per-file lock writes take and deletes it only if what it moved is still `before` (else puts it
 * back, never over something new); a directory is made by `mkdir` (fails if anything is there)
 * and removed by `rmdir` (fails if anything is in it). Anything else is a conflict, left alone:
 * files are independent, one conflict stops nothing else.
 *
 * A path whose parent entry already is the child's `after` is `already`: what a merge run again
 * after a crash finds where its first run wrote. It is never written again, never a conflict, and
 * not part of `change` (which is exactly what this run changed, ready to journal once); its entries
 * are in `alreadyChange` for a caller whose journal shows the first run's record was lost.
 *
 * Replaced content (each modified or deleted file's `before`) is put in the parent session's
 * artifacts before the file is touched, under its SHA-256, the id the ChangeSet's `before.hash`
 * names: an undo of the journaled change finds it there as it finds write_file's.
 *
 * Paths are untrusted. Reached through the parent's `WorkspaceFs` (its boundary and protected
 * paths) and, for what that seam has no operation for (delete, mkdir, rmdir, the exec bit), from
 * the root of a `DiskWorkspaceFs` through held directories that never follow a link
 * (workspace/beneath.ts). On another `WorkspaceFs` those are conflicts. Not merged, always
 * conflicts: symbolic links (the seam cannot make one, and a link is where a path could be led
 * outside), special files and files over the record's size limit (no content recorded), a change
 * of kind (a file become a directory or back), and protected paths.
 */

export interface MergeInput {
  /** The parent's workspace (a DiskWorkspaceFs in practice). */
  fs: WorkspaceFs;
  /** The parent session's artifact store: replaced contents go here so undo can restore them. */
  artifacts: ArtifactStore;
  /** Where the new contents are read from (the child's copy). */
  copyRoot: string;
  changes: readonly ChildChange[];
}

export interface MergeConflict {
  path: string;
  reason: string;
}

export interface MergeOutcome {
  /** Exactly what this run applied to the parent, ready to be journaled as `workspace.changed`. */
  change: ChangeSet;
  /** Paths written, made or deleted by this run. */
  applied: string[];
  /** Paths that already held the child's version: not written again, not in `change`. */
  already: string[];
  /** The `already` paths as a change (before → after), for a caller whose first run was not journaled. */
  alreadyChange: ChangeSet;
  /**
   * Paths left alone: changed in the parent since the base, or not mergeable. (One exception: a
   * file whose content was written but whose exec bit could not be set, the file changing again
   * in between, is in `applied` and here, and `change` records the bit it has.)
   */
  conflicts: MergeConflict[];
}

/** The reason a link change is never merged. */
export const LINKS_NOT_MERGED = "symbolic links are not merged";
/** The reason a file whose copy no longer has the child's content is not merged. */
export const COPY_CHANGED = "the child's copy changed after it finished";

type Step =
  | { kind: "applied"; after: Entry | null; note?: string }
  | { kind: "already" }
  | { kind: "conflict"; reason: string };

/** The entry at a path in the parent now, and a file's bytes (what `before` content is kept from). */
interface Current {
  entry: Entry | null;
  bytes?: Uint8Array;
}

class Conflict extends Error {}

export async function mergeChanges(input: MergeInput): Promise<MergeOutcome> {
  const outcome: MergeOutcome = {
    change: empty(),
    applied: [],
    already: [],
    alreadyChange: empty(),
    conflicts: [],
  };
  const hostRoot = input.fs instanceof DiskWorkspaceFs ? input.fs.hostRoot : undefined;
  // Directories before what goes in them; deletes last, deepest first, so a directory is empty
  // by the time its own delete comes.
  const sorted = [...input.changes].sort(byPath);
  const order = [
    ...sorted.filter((c) => c.after !== null),
    ...sorted.filter((c) => c.after === null).reverse(),
  ];
  for (const change of order) {
    let step: Step;
    try {
      step = await mergeOne(input, hostRoot, change);
    } catch (error) {
      if (error instanceof Conflict) step = { kind: "conflict", reason: error.message };
      else if (error instanceof WorkspaceError)
        step = { kind: "conflict", reason: `${error.message}; left alone` };
      else if (error instanceof BeneathError)
        step = { kind: "conflict", reason: `${error.message}; left alone` };
      else throw error;
    }
    record(outcome, change, step);
  }
  for (const set of [outcome.change, outcome.alreadyChange]) {
    set.created.sort(byPath);
    set.modified.sort(byPath);
    set.deleted.sort(byPath);
  }
  outcome.applied.sort();
  outcome.already.sort();
  outcome.conflicts.sort(byPath);
  return outcome;
}

function empty(): ChangeSet {
  return { created: [], modified: [], deleted: [] };
}

function record(outcome: MergeOutcome, change: ChildChange, step: Step): void {
  const { path: p, before } = change;
  if (step.kind === "conflict") {
    outcome.conflicts.push({ path: p, reason: step.reason });
    return;
  }
  const into = step.kind === "applied" ? outcome.change : outcome.alreadyChange;
  const after = step.kind === "applied" ? step.after : change.after;
  if (step.kind === "applied") {
    outcome.applied.push(p);
    if (step.note !== undefined) outcome.conflicts.push({ path: p, reason: step.note });
  } else outcome.already.push(p);
  if (before === null && after !== null) into.created.push({ path: p, after });
  else if (before !== null && after === null) into.deleted.push({ path: p, before });
  else if (before !== null && after !== null && !sameEntry(before, after))
    into.modified.push({ path: p, before, after });
}

async function mergeOne(input: MergeInput, hostRoot: string | undefined, change: ChildChange): Promise<Step> {
  const { fs } = input;
  const { path: p, before, after } = change;
  if (!isManifestPath(p)) return conflict("not a plain workspace path");
  const protection = fs.protectedPaths.protectionOf(p.split("/"));
  if (protection !== undefined) return conflict(`${quote(p)} is protected: ${protection.reason}`);
  if ((before !== null && isLink(before)) || (after !== null && isLink(after)))
    return conflict(LINKS_NOT_MERGED);
  if ((before !== null && isUnread(before)) || (after !== null && isUnread(after)))
    return conflict(
      "a special file or a file over the size limit: its content is not recorded, so it is not merged",
    );
  if (before !== null && after !== null && isDir(before) !== isDir(after))
    return conflict("it changed from a file to a directory or back: not merged");
  // Merged where the child's change names, never through a link in the parent (even one that
  // stays inside): the entry compared and changed is the one at that path.
  if ((await fs.resolve(p)) !== p)
    return conflict(`${quote(p)} leads through a symbolic link in the workspace; left alone`);
  const current = await currentEntry(fs, p);
  if (sameNullable(current.entry, after)) return { kind: "already" };
  if (!sameNullable(current.entry, before)) return conflict(changedSince(p, before, current.entry));

  if (after !== null && isDir(after)) {
    if (hostRoot === undefined) return conflict("directories are merged only into a workspace on disk");
    makeDirectory(hostRoot, p);
    return { kind: "applied", after: DIR };
  }
  if (after === null && before !== null && isDir(before)) {
    if (hostRoot === undefined) return conflict("directories are merged only into a workspace on disk");
    removeDirectory(hostRoot, p);
    return { kind: "applied", after: null };
  }
  // Files from here on: `before` (if any) is the parent's current entry, `current.bytes` its bytes.
  if (before !== null && isFile(before)) {
    if (current.bytes === undefined) return conflict(`${quote(p)} could not be read`);
    await input.artifacts.put(current.bytes);
  }
  if (after === null) {
    if (hostRoot === undefined) return conflict("deletes are merged only into a workspace on disk");
    await deleteFile(hostRoot, p, before as FileEntry);
    return { kind: "applied", after: null };
  }
  const wanted = after as FileEntry;
  const bytes = copyBytes(input.copyRoot, p, wanted);
  // What the write leaves for the exec bit: a replaced file keeps its mode, a new one has none.
  const written = before !== null && isFile(before) ? before.exec : false;
  if (written !== wanted.exec && hostRoot === undefined)
    return conflict("the executable bit is merged only into a workspace on disk");
  if (before === null || (before as FileEntry).hash !== wanted.hash) {
    try {
      await fs.writeFileAtomic(p, bytes, {
        expectedVersion: before === null ? null : (before as FileEntry).hash,
      });
    } catch (error) {
      if (error instanceof WorkspaceError && error.code === "STALE_VERSION")
        return conflict(`${quote(p)} changed while it was being merged; left alone`);
      throw error;
    }
  }
  if (written === wanted.exec || hostRoot === undefined) return { kind: "applied", after: wanted };
  const exec = setExec(hostRoot, p, wanted);
  if (exec === wanted.exec) return { kind: "applied", after: wanted };
  return {
    kind: "applied",
    after: { ...wanted, exec },
    note: `its content was merged but not its executable bit (${quote(p)} changed again meanwhile)`,
  };
}

function conflict(reason: string): Step {
  return { kind: "conflict", reason };
}

function sameNullable(a: Entry | null, b: Entry | null): boolean {
  return sameEntry(a ?? undefined, b ?? undefined);
}

function describe(entry: Entry | null): string {
  if (entry === null) return "absent";
  if (isDir(entry)) return "a directory";
  if (isLink(entry)) return "a symbolic link";
  if (isFile(entry)) return `version ${entry.hash.slice(0, 12)}${entry.exec ? " (executable)" : ""}`;
  return "a special file";
}

function changedSince(p: string, before: Entry | null, now: Entry | null): string {
  if (before === null)
    return `${quote(p)} was created in the parent since the child's copy was made; left alone`;
  if (now === null)
    return `${quote(p)} was deleted in the parent since the child's copy was made; left alone`;
  return `${quote(p)} changed in the parent since the child's copy was made (was ${describe(before)}, now ${describe(now)}); left alone`;
}

/** The parent's entry at `p` through its WorkspaceFs (the path was checked to lead through no link). */
async function currentEntry(fs: WorkspaceFs, p: string): Promise<Current> {
  const stat = await fs.stat(p);
  if (stat === undefined) return { entry: null };
  if (stat.kind === "directory") return { entry: DIR };
  if (stat.kind !== "file")
    throw new Conflict(`${quote(p)} is neither a file nor a directory in the parent; left alone`);
  const bytes = await fs.readFile(p);
  return {
    entry: { hash: sha256Hex(bytes), size: bytes.byteLength, exec: (stat.mode & 0o100) !== 0 },
    bytes,
  };
}

/** The child's bytes for `p`, read beneath the copy (never through a link) and checked against `after`. */
function copyBytes(copyRoot: string, p: string, after: FileEntry): Uint8Array {
  let bytes: Uint8Array;
  try {
    bytes = readFileBeneath(copyRoot, p).bytes;
  } catch (error) {
    if (error instanceof BeneathError || errnoCode(error) === "ENOENT" || errnoCode(error) === "EACCES")
      throw new Conflict(COPY_CHANGED);
    throw error;
  }
  if (bytes.byteLength !== after.size || sha256Hex(bytes) !== after.hash) throw new Conflict(COPY_CHANGED);
  return bytes;
}

/** Run `use` on the held parent directory of `p` under the root (never through a link). */
function inParent<T>(root: string, p: string, use: (dir: HeldDir, name: string) => T): T {
  const { dir, name } = openParent(root, p);
  try {
    return use(dir, name);
  } finally {
    dir.close();
  }
}

/** mkdir fails if anything is there: made only where nothing was, at commit time. */
function makeDirectory(root: string, p: string): void {
  inParent(root, p, (dir, name) => {
    try {
      mkdirSync(dir.at(name));
    } catch (error) {
      if (errnoCode(error) === "EEXIST")
        throw new Conflict(`something was put at ${quote(p)} meanwhile; left alone`);
      throw error;
    }
  });
}

/** rmdir fails if anything is in it: removed only while still empty, at commit time. */
function removeDirectory(root: string, p: string): void {
  inParent(root, p, (dir, name) => {
    if (dir.lstat(name)?.isDirectory() !== true)
      throw new Conflict(`${quote(p)} is no longer a directory; left alone`);
    try {
      rmdirSync(dir.at(name));
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOTEMPTY" || code === "EEXIST")
        throw new Conflict(`${quote(p)} has entries the child did not delete; left alone`);
      throw error;
    }
  });
}

/**
 * Delete the file at `p` only if it still is `before`: under the per-file lock every
 * writeFileAtomic takes, it is moved aside (an atomic rename), the moved file is read and
 * compared, and then removed, or put back with link(2), which never replaces something new.
 */
async function deleteFile(
  root: string,
  p: string,
  before: Pick<FileEntry, "hash"> & Partial<Pick<FileEntry, "size" | "exec">>,
): Promise<void> {
  await withFileLock(path.join(root, RESERVED_DIR, "locks"), p, async () =>
    inParent(root, p, (dir, name) => {
      const aside = `.${name}.${randomBytes(6).toString("hex")}.merge-delete`;
      try {
        renameSync(dir.at(name), dir.at(aside));
      } catch (error) {
        if (errnoCode(error) === "ENOENT") throw new Conflict(`${quote(p)} was deleted meanwhile`);
        throw error;
      }
      let still = false;
      try {
        const { fd, stats } = dir.open(aside);
        try {
          if (stats.isFile()) {
            const bytes = readFileSync(fd);
            still =
              sha256Hex(bytes) === before.hash &&
              (before.size === undefined || bytes.byteLength === before.size) &&
              (before.exec === undefined || ((stats.mode & 0o100) !== 0) === before.exec);
          }
        } finally {
          closeSync(fd);
        }
      } catch (error) {
        if (!(error instanceof BeneathError)) throw error;
      }
      if (still) {
        unlinkSync(dir.at(aside));
        return;
      }
      putBack(dir, aside, name, p);
      throw new Conflict(`${quote(p)} changed while it was being merged; left alone`);
    }),
  );
}

/**
 * Delete the workspace file at `p` only if its content still has version `hash`, by the same
 * compare-and-swap a merge deletes with (harness apply of a sub-agent's deletion proposal):
 * undefined once deleted, else why it was left alone.
 */
export async function deleteIfStill(root: string, p: string, hash: string): Promise<string | undefined> {
  try {
    await deleteFile(root, p, { hash });
    return undefined;
  } catch (error) {
    if (error instanceof Conflict) return error.message;
    if (error instanceof BeneathError)
      return `${quote(p)} cannot be reached beneath the workspace; left alone`;
    throw error;
  }
}

/** Undo a move aside without replacing anything made at the name since. */
function putBack(dir: HeldDir, aside: string, name: string, p: string): void {
  try {
    if (dir.lstat(aside)?.isFile() === true) {
      linkSync(dir.at(aside), dir.at(name));
      unlinkSync(dir.at(aside));
    } else if (dir.lstat(name) === undefined) renameSync(dir.at(aside), dir.at(name));
    else throw Object.assign(new Error("taken"), { code: "EEXIST" });
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw error;
    throw new Conflict(
      `${quote(p)} changed while it was being merged and was recreated meanwhile: the version found is kept as ${quote(aside)} beside it`,
    );
  }
}

/**
 * Set the owner's exec bit (and the group's and others' where they may read) on the file at `p`,
 * opened without following a link and only if it still holds the merged content; returns the
 * exec bit it has afterwards.
 */
function setExec(root: string, p: string, wanted: FileEntry): boolean {
  return inParent(root, p, (dir, name) => {
    const { fd, stats } = dir.open(name);
    try {
      if (!stats.isFile()) return false;
      const bytes = readFileSync(fd);
      if (sha256Hex(bytes) !== wanted.hash) return (stats.mode & 0o100) !== 0;
      const mode = stats.mode & 0o7777;
      const read = mode & 0o444;
      fchmodSync(fd, wanted.exec ? mode | (read >> 2) | 0o100 : mode & ~0o111);
      return wanted.exec;
    } finally {
      closeSync(fd);
    }
  });
}
