import { realpathSync, statSync } from "node:fs";
import path from "node:path";
import { traceMark } from "../shared/trace-startup.js";
import { HeldDir } from "./beneath.js";
import { readListing } from "./tree-list.js";

/**
 * find's listing of a large workspace started as soon as a command knows its workspace, before
 * its own code has loaded: on a 50,000-file tree find takes about a quarter of a second, which
 * then runs on the other core while this one loads and prepares the session, instead of after.
 *
 * A listing is only ever a hint (tree-list.ts): every entry it names is trusted unchanged only when
 * its whole stat matches what was hashed, so one taken a little earlier records the tree as it
 * was then, as if the session had started then; a change made meanwhile is found by the next walk
 * like any other. It is taken at most once, by the first full walk of that same root.
 */

/**
 * Fewest entries the stat cache holds before a full walk is listed by find (tree-list.ts) rather
 * than walked (tree-snapshot.ts). Starting find forks the process, synchronously: its cost grows
 * with the process's memory, not the tree's size, and nothing else on the thread runs meanwhile.
 * In a server hosting 16 sessions it was 10 ms a start on the main thread and up to 110 ms on a
 * session thread, for a tree a walk reads in well under a millisecond; on a 50,000-entry tree
 * find still saves most of a second.
 */
export const LIST_MIN_ENTRIES = 1_000;
/** Fewest bytes a cache row takes (a path, six numbers and a sha256): a file smaller than this times the entries holds fewer. */
const CACHE_ROW_MIN_BYTES = 100;
/** The stat cache's file in a workspace's state directory. */
export const TREE_CACHE_FILE = "tree-cache.json";

let pending: { root: string; listing: Promise<Buffer | undefined> } | undefined;

/**
 * Whether the saved stat cache may hold `entries` rows, from its size alone (find is started
 * before the cache is read, so the size is all there is to go by).
 */
export function cacheHolds(file: string, entries: number): boolean {
  try {
    const { size } = statSync(file);
    return entries === 0 || size >= entries * CACHE_ROW_MIN_BYTES;
  } catch {
    return false;
  }
}

/**
 * Start listing the workspace `dir` (a path as the user gave it; default the current directory)
 * when its saved stat cache is large enough that a walk would be listed. Never throws: a workspace
 * that cannot be resolved or opened is the command's own error to report.
 */
export function prefetchListing(dir: string | undefined): void {
  if (pending !== undefined) return;
  let root: string;
  try {
    root = realpathSync(path.resolve(dir ?? process.cwd()));
  } catch {
    return;
  }
  if (!cacheHolds(path.join(root, ".harness", TREE_CACHE_FILE), LIST_MIN_ENTRIES)) return;
  let held: HeldDir;
  try {
    held = HeldDir.openRoot(root);
  } catch {
    return;
  }
  traceMark("listing: prefetch started");
  const listing = readListing(held.fd, root).finally(() => {
    held.close();
    traceMark("listing: prefetch done");
  });
  // Nobody may take it: its failure must not surface as an unhandled rejection.
  listing.catch(() => undefined);
  pending = { root, listing };
}

/** The listing started for `root` (a real path), once; undefined when none was. */
export function takePrefetchedListing(root: string): Promise<Buffer | undefined> | undefined {
  if (pending === undefined || pending.root !== root) return undefined;
  const { listing } = pending;
  pending = undefined;
  return listing;
}
