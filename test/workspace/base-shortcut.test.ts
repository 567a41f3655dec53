import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryArtifactStore } from "../../src/artifacts/memory-store.js";
import type { AnyNewEvent } from "../../src/journal/vocabulary.js";
import { WorkspaceEffects } from "../../src/runtime/workspace-effects.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { manifestBytes, manifestId, manifestTotals, parseManifest } from "../../src/workspace/manifest.js";
import {
  type SnapshotStats,
  TreeSnapshot,
  type TreeSnapshotOptions,
} from "../../src/workspace/tree-snapshot.js";

/**
 * A session's base from a tree find lists exactly as it listed it for the last base is that
 * base's manifest again, read back checked (tree-base.ts); anything else, however small (a ctime,
 * a mode, a name), or a key or manifest that is not what was written, takes the ordinary walk,
 * and the record is the same either way.
 */

const hasFind = process.platform === "linux" && (existsSync("/usr/bin/find") || existsSync("/bin/find"));

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-base-shortcut-")));
  roots.push(root);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(root, rel, ".."), { recursive: true });
    writeFileSync(join(root, rel), text);
  }
  return root;
}

const FILES = {
  "a.txt": "alpha\n",
  "same.txt": "12345678",
  "sub/b.txt": "beta\n",
  "sub/deep/c.txt": "gamma\n",
  "tool.sh": "#!/bin/sh\n",
};

/** A clock well past every ctime in the tree: nothing hashed is racy. */
const later = () => Date.now() + 60_000;

interface Session {
  tree: TreeSnapshot;
  effects: WorkspaceEffects;
  artifacts: MemoryArtifactStore;
  events: AnyNewEvent[];
  journal: { record(events: AnyNewEvent[]): Promise<void>; nextSeq(): number };
  /** The base record's data. */
  base: { manifest: string; files: number; bytes: number; excluded: string[] };
  stats: SnapshotStats;
}

/** A new session (a new process: its own TreeSnapshot) starting on the tree at `root`. */
async function session(root: string, options: Partial<TreeSnapshotOptions> = {}): Promise<Session> {
  const tree = new TreeSnapshot({
    root,
    stateDir: join(root, ".harness"),
    listMinEntries: 1,
    now: later,
    ...options,
  });
  const artifacts = new MemoryArtifactStore();
  const effects = new WorkspaceEffects(tree, artifacts);
  const events: AnyNewEvent[] = [];
  const journal = {
    record: async (added: AnyNewEvent[]) => {
      events.push(...added);
    },
    nextSeq: () => events.length,
  };
  await effects.start([], journal);
  const [base] = events;
  if (base?.type !== "workspace.base") throw new Error("no base recorded");
  return { tree, effects, artifacts, events, journal, base: base.data as Session["base"], stats: tree.last! };
}

/** The tree's manifest as a walk with nothing remembered (its own state dir) records it. */
async function reference(root: string, excludes: string[] = []) {
  const stateDir = mkdtempSync(join(tmpdir(), "harness-base-reference-"));
  roots.push(stateDir);
  const manifest = await new TreeSnapshot({ root, stateDir, excludes, watch: false, now: later }).snapshot({
    full: true,
  });
  return { id: manifestId(manifest), totals: manifestTotals(manifest), manifest };
}

/** Two sessions: the first saves the stat cache, the second lists the tree and remembers its base. */
async function primed(files: Record<string, string> = FILES): Promise<{ root: string; second: Session }> {
  const root = tree(files);
  const first = await session(root);
  expect(first.stats.walk).toBe("full");
  expect(first.stats.listed).toBeUndefined();
  const second = await session(root);
  expect(second.stats).toMatchObject({ walk: "full", listed: true });
  expect(existsSync(join(root, ".harness", "tree-base.json"))).toBe(true);
  return { root, second };
}

/** The base must be the reference manifest, stored in the session's artifacts under its id. */
async function expectCorrectBase(s: Session, root: string, excludes: string[] = []): Promise<void> {
  const want = await reference(root, excludes);
  expect(s.base.manifest).toBe(want.id);
  expect({ files: s.base.files, bytes: s.base.bytes }).toEqual(want.totals);
  const stored = await s.artifacts.read(s.base.manifest);
  expect(stored).toBeDefined();
  expect(sha256Hex(stored as Uint8Array)).toBe(want.id);
  expect(parseManifest(stored as Uint8Array)).toEqual(want.manifest);
}

describe.skipIf(!hasFind)("a session's base from an unchanged tree", () => {
  it("is the last base's manifest again, found from the listing alone", async () => {
    const { root, second } = await primed();
    const third = await session(root);
    expect(third.stats.walk).toBe("unchanged");
    expect(third.stats.hashed).toBe(0);
    expect(third.stats.entries).toBe(second.stats.entries);
    expect(third.base).toEqual(second.base);
    await expectCorrectBase(third, root);
    // And again: a session that changed nothing leaves the base remembered.
    await third.effects.outside(third.journal, { full: true });
    third.effects.close();
    expect(third.events).toHaveLength(1);
    const fourth = await session(root);
    expect(fourth.stats.walk).toBe("unchanged");
    expect(fourth.base).toEqual(second.base);
  });

  it("is walked when a file changed with its size and mtime put back (its ctime moved)", async () => {
    const { root, second } = await primed();
    const path = join(root, "same.txt");
    const before = statSync(path);
    // The mtime kept to the nanosecond on a file outside the tree, and put back as `touch -r` does.
    const stamp = join(mkdtempSync(join(tmpdir(), "harness-base-stamp-")), "stamp");
    roots.push(join(stamp, ".."));
    execFileSync("touch", ["-r", path, stamp]);
    writeFileSync(path, "ABCDEFGH");
    execFileSync("touch", ["-m", "-r", stamp, path]);
    expect(statSync(path).size).toBe(before.size);
    expect(statSync(path).mtimeMs).toBe(before.mtimeMs);
    const next = await session(root);
    expect(next.stats.walk).toBe("full");
    expect(next.base.manifest).not.toBe(second.base.manifest);
    expect(
      parseManifest((await next.artifacts.read(next.base.manifest)) as Uint8Array).get("same.txt"),
    ).toEqual({
      hash: sha256Hex(readFileSync(path)),
      size: 8,
      exec: false,
    });
    expect(readFileSync(path, "utf8")).toBe("ABCDEFGH");
    await expectCorrectBase(next, root);
    // The changed tree's base is remembered in its turn.
    const after = await session(root);
    expect(after.stats.walk).toBe("unchanged");
    expect(after.base).toEqual(next.base);
  });

  it.each([
    ["a file added", (root: string) => writeFileSync(join(root, "sub/new.txt"), "new\n")],
    ["a file deleted", (root: string) => unlinkSync(join(root, "sub/deep/c.txt"))],
    ["a file renamed", (root: string) => renameSync(join(root, "a.txt"), join(root, "sub/a.txt"))],
    ["a file made executable", (root: string) => chmodSync(join(root, "tool.sh"), 0o755)],
    ["a directory added", (root: string) => mkdirSync(join(root, "sub/deep/empty"))],
  ])("is walked after %s, and records the tree as it is", async (_what, change) => {
    const { root, second } = await primed();
    change(root);
    const next = await session(root);
    expect(next.stats.walk).toBe("full");
    expect(next.base.manifest).not.toBe(second.base.manifest);
    await expectCorrectBase(next, root);
  });

  it("is walked when the key does not parse or the kept manifest is not what it names", async () => {
    const { root, second } = await primed();
    const state = join(root, ".harness");
    const key = readFileSync(join(state, "tree-base.json"), "utf8");
    writeFileSync(join(state, "tree-base.json"), key.slice(0, -7));
    const torn = await session(root);
    expect(torn.stats.walk).toBe("full");
    expect(torn.base).toEqual(second.base);
    await expectCorrectBase(torn, root);

    // Another tree's manifest (valid, canonical) where the key's manifest should be.
    const other = manifestBytes(new Map([["a.txt", { hash: sha256Hex("forged"), size: 6, exec: false }]]));
    writeFileSync(join(state, "tree-base.manifest"), other);
    const forged = await session(root);
    expect(forged.stats.walk).toBe("full");
    expect(forged.base).toEqual(second.base);
    await expectCorrectBase(forged, root);

    // The key pointing at the forged bytes, the listing hash unchanged: no listing matches a
    // tampered key anyway, and the manifest is read back checked only against the key, so the
    // forged key's listing must still be exactly the tree's to be used.
    const parsed = JSON.parse(readFileSync(join(state, "tree-base.json"), "utf8")) as Record<string, unknown>;
    writeFileSync(join(state, "tree-base.manifest"), other);
    writeFileSync(
      join(state, "tree-base.json"),
      JSON.stringify({ ...parsed, listing: sha256Hex("some other listing"), manifest: sha256Hex(other) }),
    );
    const planted = await session(root);
    expect(planted.stats.walk).toBe("full");
    expect(planted.base).toEqual(second.base);
    await expectCorrectBase(planted, root);
  });

  it("is walked when the configured excludes changed", async () => {
    const { root } = await primed();
    const excluded = await session(root, { excludes: ["deep/"] });
    expect(excluded.stats.walk).toBe("full");
    await expectCorrectBase(excluded, root, ["deep/"]);
    expect(excluded.base.excluded).toContain("deep/");
    // And back: the base remembered for the other excludes is not this one.
    const back = await session(root);
    expect(back.stats.walk).toBe("full");
    await expectCorrectBase(back, root);
  });

  it("is walked when the size limit changed", async () => {
    const { root } = await primed();
    const limited = await session(root, { maxFileBytes: 7 });
    expect(limited.stats.walk).toBe("full");
    expect(
      parseManifest((await limited.artifacts.read(limited.base.manifest)) as Uint8Array).get("same.txt"),
    ).toEqual({ oversize: true, size: 8, exec: false });
  });

  it("is not remembered from a base with a file hashed within the racy window", async () => {
    const { root } = await primed();
    writeFileSync(join(root, "a.txt"), "ALPHA\n");
    const { ctimeMs } = statSync(join(root, "a.txt"));
    // Hashed "at" its ctime: a write in the same clock tick would keep every listed field.
    const racy = await session(root, { now: () => ctimeMs + 1 });
    expect(racy.stats).toMatchObject({ walk: "full", listed: true });
    expect(existsSync(join(root, ".harness", "tree-base.json"))).toBe(false);
    const next = await session(root);
    expect(next.stats.walk).toBe("full");
    await expectCorrectBase(next, root);
  });

  it("is not remembered from a base that left a name out", async () => {
    const root = tree(FILES);
    writeFileSync(Buffer.concat([Buffer.from(`${root}/bad-`), Buffer.from([0xff])]), "x");
    await session(root);
    const second = await session(root);
    expect(second.stats).toMatchObject({ walk: "full", listed: true });
    expect(second.stats.skipped).toHaveLength(1);
    expect(existsSync(join(root, ".harness", "tree-base.json"))).toBe(false);
    const third = await session(root);
    expect(third.stats.walk).toBe("full");
    // Without it, the base is remembered, and found again.
    unlinkSync(Buffer.concat([Buffer.from(`${root}/bad-`), Buffer.from([0xff])]));
    const fourth = await session(root);
    expect(fourth.stats.skipped).toEqual([]);
    expect((await session(root)).stats.walk).toBe("unchanged");
  });

  it("compares what changes later with the base it did not build", async () => {
    const { root } = await primed();
    const s = await session(root);
    expect(s.stats.walk).toBe("unchanged");
    // A person's edit before the first call, then a command's.
    writeFileSync(join(root, "a.txt"), "edited\n");
    await s.effects.outside(s.journal, { full: true });
    const { found } = await s.effects.around("shell", s.journal, async () => {
      writeFileSync(join(root, "sub/made.txt"), "made\n");
      unlinkSync(join(root, "sub/deep/c.txt"));
    });
    const file = (text: string) => ({ hash: sha256Hex(text), size: Buffer.byteLength(text), exec: false });
    expect(s.events.slice(1).map((e) => e.data)).toEqual([
      {
        call_id: "outside:1",
        source: "outside",
        created: [],
        modified: [{ path: "a.txt", before: file("alpha\n"), after: file("edited\n") }],
        deleted: [],
      },
    ]);
    expect(found).toEqual({
      source: "shell",
      change: {
        created: [{ path: "sub/made.txt", after: file("made\n") }],
        modified: [],
        deleted: [{ path: "sub/deep/c.txt", before: file("gamma\n") }],
      },
    });
    // The session moved the tree on: the next one does not try the base it started from.
    s.effects.close();
    expect(existsSync(join(root, ".harness", "tree-base.json"))).toBe(false);
    const next = await session(root);
    expect(next.stats).toMatchObject({ walk: "full", listed: true });
    await expectCorrectBase(next, root);
    expect((await session(root)).stats.walk).toBe("unchanged");
  });

  it("finds nothing when the tree is still the base, and then what a command changes", async () => {
    const { root } = await primed();
    const s = await session(root);
    expect(s.stats.walk).toBe("unchanged");
    await s.effects.outside(s.journal, { full: true });
    expect(s.events).toHaveLength(1);
    const { found } = await s.effects.around("shell", s.journal, async () => {
      writeFileSync(join(root, "a.txt"), "changed\n");
      rmSync(join(root, "sub/deep"), { recursive: true });
    });
    const file = (text: string) => ({ hash: sha256Hex(text), size: Buffer.byteLength(text), exec: false });
    expect(found?.change).toEqual({
      created: [],
      modified: [{ path: "a.txt", before: file("alpha\n"), after: file("changed\n") }],
      deleted: [
        { path: "sub/deep", before: { dir: true } },
        { path: "sub/deep/c.txt", before: file("gamma\n") },
      ],
    });
    s.effects.close();
  });

  it("moves the record on for a file tool's change made before anything compared", async () => {
    const { root } = await primed();
    const s = await session(root);
    expect(s.stats.walk).toBe("unchanged");
    const file = (text: string) => ({ hash: sha256Hex(text), size: Buffer.byteLength(text), exec: false });
    writeFileSync(join(root, "sub/deep/c.txt"), "GAMMA\n");
    const kept = s.effects.toolChanged({
      created: [],
      modified: [{ path: "sub/deep/c.txt", before: file("gamma\n"), after: file("GAMMA\n") }],
      deleted: [],
    });
    expect(kept?.modified).toHaveLength(1);
    // The tool's change is the record now: comparing finds nothing more.
    await s.effects.outside(s.journal, { full: true });
    expect(s.events).toHaveLength(1);
    s.effects.close();
    expect(existsSync(join(root, ".harness", "tree-base.json"))).toBe(false);
  });
});
