import { type Dirent, readdirSync, readFileSync, statSync } from "node:fs";
import ignore, { type Ignore } from "ignore";
import { isReservedParts, isValidComponent } from "../../../workspace/boundary.js";
import { DiskWorkspaceFs } from "../../../workspace/disk-fs.js";
import { WorkspaceError, type WorkspaceFs } from "../../../workspace/fs.js";
import { throwIfAborted } from "../common.js";
import { pauser } from "./pause.js";
import { GREP_MAX_FILE_BYTES, looksLikeText } from "./text.js";

/**
 * The files a search looks at: everything below `start` that is not ignored by a `.gitignore`
 * (the root's, nested ones, and those of the directories above `start`), not inside `.git` or
 * `.harness`, and not a name no tool could address. A symbolic link to a file inside the
 * workspace counts (it is reported under its own name); links to directories are not followed
 * and links leading out fail the boundary check.
 *
 * On a disk workspace the directories are listed synchronously (one readdir call each, no await
 * per entry): this listing is most of a search's cost on a large tree. A directory swapped for a
 * symlink during the walk can at worst add names; no content is read through them (every read
 * confirms where the opened file really is).
 */
export interface Candidates {
  /** Workspace-relative paths, unsorted. */
  files: string[];
  /** The candidates that are symbolic links (read through the workspace, never by host path). */
  links: Set<string>;
  /**
   * What the walk left out below `start`, so a search that walks the tree again (rg over the
   * directory) can leave out the same: directories it did not enter (ignored, `.git`, the root's
   * `.harness`, names no tool could address) and ignored files. Disk workspaces only.
   */
  skipped: { dirs: string[]; files: string[] };
}

interface IgnoreRules {
  /** Directory the .gitignore lives in ("." for the root). */
  base: string;
  rules: Ignore;
}

type Entry = { name: string; kind: "file" | "directory" | "symlink" | "other" | "reserved" };

export async function listCandidates(
  fs: WorkspaceFs,
  start: string,
  signal: AbortSignal,
): Promise<Candidates> {
  const lister = fs instanceof DiskWorkspaceFs ? diskLister(fs.hostRoot) : undefined;
  const found: Candidates = { files: [], links: new Set(), skipped: { dirs: [], files: [] } };
  const stack = await ancestorRules(fs, start, lister);
  await walk(fs, start, stack, { signal, pause: pauser(), names: new Map() }, lister, found);
  return found;
}

/**
 * Whether `path` (with a trailing "/" for directories) is ignored; the deepest decisive rule wins.
 * The walk never enters an ignored directory, so each path is tested alone: `Ignore.test` would
 * test every parent directory again (through a cache holding every path), which made it most of
 * the cost of listing a large tree. The pinned `ignore` version's rule list offers the one-path
 * test; should it be missing, the public test is used.
 */
function isIgnored(path: string, stack: readonly IgnoreRules[]): boolean {
  for (let i = stack.length - 1; i >= 0; i--) {
    const { base, rules } = stack[i] as IgnoreRules;
    const relative = base === "." ? path : path.slice(base.length + 1);
    const result = testOne(rules, relative);
    if (result.ignored) return true;
    if (result.unignored) return false;
  }
  return false;
}

interface RuleList {
  test(path: string, checkUnignored: boolean, mode: "regex"): { ignored: boolean; unignored: boolean };
}

function testOne(rules: Ignore, path: string): { ignored: boolean; unignored: boolean } {
  const list = (rules as unknown as { _rules?: Partial<RuleList> })._rules;
  return typeof list?.test === "function" ? list.test(path, true, "regex") : rules.test(path);
}

interface SyncLister {
  list(dir: string): Entry[];
  /** A regular file's text (undefined when not text); symlinks are left to the workspace. */
  text(path: string): string | undefined;
}

function diskLister(root: string): SyncLister {
  const host = (dir: string): string => (dir === "." ? root : `${root}/${dir}`);
  return {
    list(dir) {
      let dirents: Dirent[];
      try {
        dirents = readdirSync(host(dir), { withFileTypes: true });
      } catch {
        return [];
      }
      const entries: Entry[] = [];
      for (const dirent of dirents) {
        // Listed for the walk to record as skipped (a directory) and pass over.
        if (dir === "." && isReservedParts([dirent.name])) {
          if (dirent.isDirectory()) entries.push({ name: dirent.name, kind: "reserved" });
          continue;
        }
        const kind = dirent.isFile()
          ? "file"
          : dirent.isDirectory()
            ? "directory"
            : dirent.isSymbolicLink()
              ? "symlink"
              : "other";
        entries.push({ name: dirent.name, kind });
      }
      return entries;
    },
    text(path) {
      try {
        if (statSync(host(path)).size > GREP_MAX_FILE_BYTES) return undefined;
        const bytes = readFileSync(host(path));
        return looksLikeText(bytes) ? new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes) : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

async function ancestorRules(
  fs: WorkspaceFs,
  start: string,
  lister: SyncLister | undefined,
): Promise<IgnoreRules[]> {
  if (start === ".") return [];
  const parts = start.split("/");
  const stack: IgnoreRules[] = [];
  for (let i = 0; i < parts.length; i++) {
    const dir = i === 0 ? "." : parts.slice(0, i).join("/");
    const rules = await loadGitignore(fs, dir, lister, undefined);
    if (rules !== undefined) stack.push(rules);
  }
  return stack;
}

async function loadGitignore(
  fs: WorkspaceFs,
  dir: string,
  lister: SyncLister | undefined,
  kind: Entry["kind"] | undefined,
): Promise<IgnoreRules | undefined> {
  const path = dir === "." ? ".gitignore" : `${dir}/.gitignore`;
  const text = lister !== undefined && kind === "file" ? lister.text(path) : await readText(fs, path);
  return text === undefined ? undefined : { base: dir, rules: ignore().add(text) };
}

interface WalkRun {
  signal: AbortSignal;
  pause: () => Promise<void>;
  /**
   * Names already judged addressable or not: a large tree repeats a few thousand names
   * (index.js, package.json, src) across tens of thousands of entries.
   */
  names: Map<string, boolean>;
}

async function walk(
  fs: WorkspaceFs,
  dir: string,
  inherited: readonly IgnoreRules[],
  run: WalkRun,
  lister: SyncLister | undefined,
  found: Candidates,
): Promise<void> {
  await run.pause();
  throwIfAborted(run.signal);
  const entries = lister !== undefined ? lister.list(dir) : await fs.readDir(dir);
  const gitignore = entries.find((entry) => entry.name === ".gitignore");
  const own = gitignore === undefined ? undefined : await loadGitignore(fs, dir, lister, gitignore.kind);
  const stack = own === undefined ? inherited : [...inherited, own];
  for (const entry of entries) {
    const path = dir === "." ? entry.name : `${dir}/${entry.name}`;
    if (entry.kind === "reserved") {
      found.skipped.dirs.push(path);
      continue;
    }
    // Names no tool could address (e.g. a Windows device name created on Linux) are skipped.
    let valid = run.names.get(entry.name);
    if (valid === undefined) {
      valid = isValidComponent(entry.name);
      run.names.set(entry.name, valid);
    }
    if (!valid) {
      if (entry.kind === "directory") found.skipped.dirs.push(path);
      else if (entry.kind === "file") found.skipped.files.push(path);
      continue;
    }
    if (entry.kind === "directory") {
      if (entry.name === ".git" || isIgnored(`${path}/`, stack)) {
        found.skipped.dirs.push(path);
        continue;
      }
      await walk(fs, path, stack, run, lister, found);
    } else if (entry.kind === "file") {
      if (isIgnored(path, stack)) found.skipped.files.push(path);
      else found.files.push(path);
    } else if (entry.kind === "symlink" && !isIgnored(path, stack)) {
      // A link to a file inside the workspace is searched; links to directories are not followed,
      // and links that leave the workspace fail the boundary check and are skipped.
      const target = await fs.stat(path).catch((error: unknown) => {
        if (error instanceof WorkspaceError) return undefined;
        throw error;
      });
      if (target?.kind === "file") {
        found.files.push(path);
        found.links.add(path);
      }
    }
  }
}

/** A file's text through the workspace, or undefined when it is binary, not UTF-8, too large or unreadable. */
export async function readText(fs: WorkspaceFs, path: string): Promise<string | undefined> {
  try {
    const stat = await fs.stat(path);
    if (stat?.kind !== "file" || stat.size > GREP_MAX_FILE_BYTES) return undefined;
    const bytes = await fs.readFile(path);
    return looksLikeText(bytes) ? new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes) : undefined;
  } catch (error) {
    if (error instanceof WorkspaceError) return undefined;
    throw error;
  }
}
