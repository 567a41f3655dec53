import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  LIST_MIN_ENTRIES,
  prefetchListing,
  TREE_CACHE_FILE,
  takePrefetchedListing,
} from "../../src/workspace/listing-prefetch.js";
import { manifestBytes } from "../../src/workspace/manifest.js";
import { TreeSnapshot } from "../../src/workspace/tree-snapshot.js";

/**
 * A listing a command starts before it loads (harness run, from its --workspace) is a hint for
 * one thing only: the base of a session on that same root. A walk after the base must see the
 * tree as it is then, so nothing else takes it, and it is taken once.
 */

const roots: string[] = [];
afterEach(() => {
  // Whatever a test left pending is dropped, so the next starts with none.
  for (const root of roots.splice(0)) {
    void takePrefetchedListing(root);
    rmSync(root, { recursive: true, force: true });
  }
});

/** A tree whose saved stat cache is large enough for a listing (its content does not matter). */
function tree(cacheBytes = LIST_MIN_ENTRIES * 100): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-prefetch-")));
  roots.push(root);
  mkdirSync(join(root, "sub", "deep"), { recursive: true });
  writeFileSync(join(root, "a.txt"), "alpha\n");
  writeFileSync(join(root, "sub", "deep", "b.txt"), "beta\n");
  mkdirSync(join(root, ".harness"));
  writeFileSync(join(root, ".harness", TREE_CACHE_FILE), " ".repeat(cacheBytes));
  return root;
}

const snapshotOf = (root: string) =>
  new TreeSnapshot({
    root,
    stateDir: join(root, ".harness"),
    listMinEntries: 1,
    watch: false,
    now: () => Date.now() + 60_000,
  });

describe("a listing started before the command loads", () => {
  it("is taken by the base of its root, once, and the base is what a walk records", async () => {
    const root = tree();
    const walked = await snapshotOf(root).snapshot({ full: true });
    prefetchListing(root);
    const based = await snapshotOf(root).base();
    expect("manifest" in based).toBe(true);
    if (!("manifest" in based)) return;
    expect(Buffer.from(manifestBytes(based.manifest)).toString()).toBe(
      Buffer.from(manifestBytes(walked)).toString(),
    );
    // Taken: nothing is left for anyone else.
    expect(takePrefetchedListing(root)).toBeUndefined();
  });

  it("is never taken by a walk that is not a base, nor by another root's base", async () => {
    const root = tree();
    const other = tree();
    prefetchListing(root);
    await snapshotOf(root).snapshot({ full: true });
    await snapshotOf(other).base();
    const listing = takePrefetchedListing(root);
    expect(listing).toBeDefined();
    // It is find's listing of that root: the files below it, with their stat.
    const text = (await listing)?.toString("latin1") ?? "";
    expect(text).toContain("sub/deep/b.txt\0");
    expect(text).not.toContain(".harness");
  });

  it("is not started for a tree whose cache is too small to be listed, or a workspace that is not there", () => {
    const small = tree(10);
    prefetchListing(small);
    expect(takePrefetchedListing(small)).toBeUndefined();
    const gone = join(small, "missing");
    prefetchListing(gone);
    expect(takePrefetchedListing(gone)).toBeUndefined();
  });

  it("leaves no file behind: find writes to a file unlinked as soon as it is opened", async () => {
    const root = tree();
    prefetchListing(root);
    await takePrefetchedListing(root);
    expect(
      readdirSync(tmpdir()).filter((name) => name.startsWith(`harness-listing-${process.pid}-`)),
    ).toEqual([]);
  });
});
