import { execFileSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { diffManifests, manifestJson, readManifest } from "../../src/workspace/manifest.js";
import { TreeSnapshot } from "../../src/workspace/tree-snapshot.js";

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function workspace(files: Record<string, string | Buffer>): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-tree-")));
  roots.push(root);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

/** A clock well after every file's ctime: no entry is "racy", so only a stat change causes a rehash. */
const later = () => Date.now() + 60_000;

function snapshotter(root: string, excludes: string[] = [], watch = false) {
  return new TreeSnapshot({ root, stateDir: join(root, ".harness"), excludes, now: later, watch });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("TreeSnapshot", () => {
  it("records a FIFO by its kind and a file over the size limit by its size, reading neither", async () => {
    const root = workspace({ "small.txt": "small", "big.bin": "0123456789", "sub/.harness/x": "nested" });
    chmodSync(join(root, "big.bin"), 0o755);
    execFileSync("mkfifo", [join(root, "pipe")]);
    const tree = new TreeSnapshot({
      root,
      stateDir: join(root, ".harness"),
      now: later,
      watch: true,
      maxFileBytes: 8,
    });
    try {
      const manifest = await tree.snapshot({ full: true });
      expect(manifest.get("pipe")).toEqual({ special: "fifo" });
      expect(manifest.get("big.bin")).toEqual({ oversize: true, size: 10, exec: true });
      expect(manifest.get("sub/.harness/x")).toEqual({ hash: sha256Hex("nested"), size: 6, exec: false });
      // Neither is copied into the object store.
      expect(readdirSync(join(root, ".harness/objects")).sort()).toEqual(
        [sha256Hex("nested"), sha256Hex("small")].sort(),
      );
      // The manifest says so in its version, and reads back the same.
      const json = manifestJson(manifest);
      expect(JSON.parse(json).version).toBe(3);
      expect(readManifest(json).tree).toEqual(manifest);
      // Grown, it is a change by size; replaced by a file within the limit, a change to a file.
      writeFileSync(join(root, "big.bin"), "0123456789ab");
      rmSync(join(root, "pipe"));
      writeFileSync(join(root, "pipe"), "now");
      const after = await tree.snapshot();
      expect(diffManifests(manifest, after).modified).toEqual([
        {
          path: "big.bin",
          before: { oversize: true, size: 10, exec: true },
          after: { oversize: true, size: 12, exec: true },
        },
        {
          path: "pipe",
          before: { special: "fifo" },
          after: { hash: sha256Hex("now"), size: 3, exec: false },
        },
      ]);
    } finally {
      tree.close();
    }
  });

  it("lists directories (empty ones too), files with hash, size and exec bit, symlinks by target, odd names as they are; no root .git or .harness, but nested ones are recorded", async () => {
    const binary = Buffer.from([0, 255, 10, 0]);
    const root = workspace({
      "a.txt": "a\n",
      "bin/run": "#!/bin/sh\n",
      "data.bin": binary,
      "line\nbreak": "n",
      "-rf": "dash",
      "ünï cödé": "u",
      ".git/HEAD": "ref",
      ".harness/sessions/x": "y",
      "sub/.git/config": "nested repo",
      "sub/.harness/state": "nested state",
    });
    chmodSync(join(root, "bin/run"), 0o755);
    symlinkSync("a.txt", join(root, "link"));
    symlinkSync("/etc/passwd", join(root, "outside"));
    mkdirSync(join(root, "empty/deeper"), { recursive: true });
    const manifest = await snapshotter(root).snapshot();
    expect(Object.fromEntries(manifest)).toEqual({
      bin: { dir: true },
      empty: { dir: true },
      "empty/deeper": { dir: true },
      sub: { dir: true },
      "sub/.git": { dir: true },
      "sub/.git/config": { hash: sha256Hex("nested repo"), size: 11, exec: false },
      "sub/.harness": { dir: true },
      "sub/.harness/state": { hash: sha256Hex("nested state"), size: 12, exec: false },
      "a.txt": { hash: sha256Hex("a\n"), size: 2, exec: false },
      "bin/run": { hash: sha256Hex("#!/bin/sh\n"), size: 10, exec: true },
      "data.bin": { hash: sha256Hex(binary), size: 4, exec: false },
      "line\nbreak": { hash: sha256Hex("n"), size: 1, exec: false },
      "-rf": { hash: sha256Hex("dash"), size: 4, exec: false },
      "ünï cödé": { hash: sha256Hex("u"), size: 1, exec: false },
      link: { link: "a.txt" },
      outside: { link: "/etc/passwd" },
    });
  });

  it("keeps every hashed file's bytes by content, checked when read back", async () => {
    const root = workspace({ "a.txt": "kept\n" });
    const tree = snapshotter(root);
    await tree.snapshot();
    expect(Buffer.from(tree.object(sha256Hex("kept\n")) ?? []).toString()).toBe("kept\n");
    writeFileSync(join(root, ".harness/objects", sha256Hex("kept\n")), "forged");
    expect(tree.object(sha256Hex("kept\n"))).toBeUndefined();
  });

  it("keeps a file larger than the read buffer chunk by chunk, byte for byte, and replaces a forged object at its hash", async () => {
    // Over the 1 MiB scratch buffer and not a multiple of the chunk: read and copied in chunks.
    const big = Buffer.alloc(3 * 1024 * 1024 + 12_345);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7919) % 251;
    const small = "small and whole\n";
    const root = workspace({ "big.bin": big, "small.txt": small, "again/big.bin": big });
    const hash = sha256Hex(big);
    // A repository can ship .harness/objects/<hash> holding anything: it is not trusted.
    mkdirSync(join(root, ".harness/objects"), { recursive: true });
    writeFileSync(join(root, ".harness/objects", hash), "forged");
    writeFileSync(join(root, ".harness/objects", sha256Hex(small)), "forged too");
    const tree = snapshotter(root);
    const manifest = await tree.snapshot();
    expect(manifest.get("big.bin")).toEqual({ hash, size: big.length, exec: false });
    expect(manifest.get("again/big.bin")).toEqual({ hash, size: big.length, exec: false });
    expect(readFileSync(join(root, ".harness/objects", hash)).equals(big)).toBe(true);
    expect(readFileSync(join(root, ".harness/objects", sha256Hex(small)), "utf8")).toBe(small);
    // No temporary copy is left behind (the second big.bin found the first one's object).
    expect(readdirSync(join(root, ".harness/objects")).sort()).toEqual([hash, sha256Hex(small)].sort());
  });

  it("saves a cache of many rows that a new process reads back whole (written in slices)", async () => {
    const files: Record<string, string> = {};
    // Long names make the rows big: more than one slice with few files to write.
    for (let i = 0; i < 1_000; i++) files[`d${i % 17}/file-${i}-${"x".repeat(230)}.txt`] = `content ${i}\n`;
    const root = workspace(files);
    const first = snapshotter(root);
    const manifest = await first.snapshot();
    first.save();
    const text = readFileSync(join(root, ".harness/tree-cache.json"), "utf8");
    // More than one slice of rows, still one JSON document.
    expect(text.length).toBeGreaterThan(256 * 1024);
    const cache = JSON.parse(text) as { version: number; root: string; rows: unknown[][] };
    expect(cache.version).toBe(3);
    expect(cache.root).toBe(root);
    expect(cache.rows).toHaveLength(1_000);
    const second = snapshotter(root);
    expect(await second.snapshot()).toEqual(manifest);
    expect(second.last?.hashed).toBe(0);
  });

  it("hashes a file the policy withholds but keeps no copy of its bytes anywhere under .harness", async () => {
    const root = workspace({ ".env": "API=SECRET_ONLY_HERE\n", "src/a.ts": "export {};\n" });
    const tree = new TreeSnapshot({
      root,
      stateDir: join(root, ".harness"),
      now: later,
      watch: false,
      withheld: (path) => path === ".env",
    });
    const manifest = await tree.snapshot();
    expect(manifest.get(".env")).toMatchObject({ hash: sha256Hex("API=SECRET_ONLY_HERE\n") });
    expect(tree.object(sha256Hex("API=SECRET_ONLY_HERE\n"))).toBeUndefined();
    expect(tree.object(sha256Hex("export {};\n"))).toBeDefined();
    tree.save();
    const dir = join(root, ".harness");
    const files = readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((name) =>
      statSync(join(dir, name)).isFile(),
    );
    expect(files.length).toBeGreaterThan(0);
    for (const name of files) expect(readFileSync(join(dir, name), "utf8")).not.toContain("SECRET_ONLY_HERE");
  });

  it("a file hashed in the same clock tick as its last change is hashed again next time", async () => {
    const root = workspace({ "a.txt": "x" });
    const tree = new TreeSnapshot({ root, stateDir: join(root, ".harness"), watch: false });
    await tree.snapshot();
    await tree.snapshot();
    expect(tree.last?.hashed).toBe(1);
  });

  it("a new process reuses the saved stat cache instead of hashing everything again", async () => {
    const root = workspace({ "a.txt": "a", "b/c.txt": "c" });
    const first = snapshotter(root);
    const manifest = await first.snapshot();
    first.save();
    const second = snapshotter(root);
    expect(await second.snapshot()).toEqual(manifest);
    expect(second.last?.hashed).toBe(0);
  });

  it("a file hashed in its change's clock tick is not saved as known: the next process hashes it again", async () => {
    const root = workspace({ "old.txt": "o" });
    await sleep(300);
    writeFileSync(join(root, "a.txt"), "a");
    // The clock is a.txt's own change time: within the tick, so "a.txt" is racy; "old.txt" is not.
    const changed = statSync(join(root, "a.txt")).ctimeMs;
    const first = new TreeSnapshot({
      root,
      stateDir: join(root, ".harness"),
      watch: false,
      now: () => changed,
    });
    await first.snapshot();
    first.save();
    const rows = JSON.parse(readFileSync(join(root, ".harness/tree-cache.json"), "utf8")).rows as unknown[][];
    expect(rows.map((row) => row[0])).toEqual(["old.txt"]);
    const second = snapshotter(root);
    await second.snapshot();
    expect(second.last?.hashed).toBe(1);
  });

  it("a new process finds unchanged files by their stat and still sees every change: a same-size edit with its mtime put back, a file become a link, a directory become a file", async () => {
    const root = workspace({ "a.txt": "aaaa", "b.txt": "bbbb", "d/c.txt": "c", "e/f.txt": "f" });
    const first = snapshotter(root);
    const before = await first.snapshot();
    first.save();
    const unchanged = snapshotter(root);
    expect(await unchanged.snapshot()).toEqual(before);
    expect(unchanged.last?.hashed).toBe(0);

    const mtime = statSync(join(root, "a.txt")).mtime;
    await sleep(30); // past the file system clock's tick, so the write gets a new ctime
    writeFileSync(join(root, "a.txt"), "AAAA");
    utimesSync(join(root, "a.txt"), mtime, mtime);
    expect(statSync(join(root, "a.txt")).size).toBe(4);
    rmSync(join(root, "b.txt"));
    symlinkSync("a.txt", join(root, "b.txt"));
    rmSync(join(root, "d"), { recursive: true });
    writeFileSync(join(root, "d"), "now a file");
    const next = snapshotter(root);
    const after = await next.snapshot();
    expect(next.last?.hashed).toBe(3);
    expect(diffManifests(before, after)).toEqual({
      created: [],
      modified: [
        {
          path: "a.txt",
          before: before.get("a.txt"),
          after: { hash: sha256Hex("AAAA"), size: 4, exec: false },
        },
        { path: "b.txt", before: before.get("b.txt"), after: { link: "a.txt" } },
        { path: "d", before: { dir: true }, after: { hash: sha256Hex("now a file"), size: 10, exec: false } },
      ],
      deleted: [{ path: "d/c.txt", before: before.get("d/c.txt") }],
    });
  });

  it("an unchanged tree leaves the saved cache as it is; a change is saved, and the next process sees it", async () => {
    const root = workspace({ "a.txt": "aaaa", "sub/b.txt": "b" });
    const file = join(root, ".harness/tree-cache.json");
    const first = snapshotter(root);
    await first.snapshot();
    first.save();
    const saved = statSync(file, { bigint: true });
    const bytes = readFileSync(file);

    const second = snapshotter(root);
    await second.snapshot();
    second.save();
    const kept = statSync(file, { bigint: true });
    expect([kept.ino, kept.mtimeNs, kept.ctimeNs]).toEqual([saved.ino, saved.mtimeNs, saved.ctimeNs]);
    expect(readFileSync(file).equals(bytes)).toBe(true);

    await sleep(30);
    writeFileSync(join(root, "sub/b.txt"), "changed");
    const third = snapshotter(root);
    expect((await third.snapshot()).get("sub/b.txt")).toEqual({
      hash: sha256Hex("changed"),
      size: 7,
      exec: false,
    });
    third.save();
    expect(statSync(file, { bigint: true }).ino).not.toBe(saved.ino);
    const rows = JSON.parse(readFileSync(file, "utf8")).rows as unknown[][];
    expect(rows.find((row) => row[0] === "sub/b.txt")?.[7]).toBe(sha256Hex("changed"));
    const fourth = snapshotter(root);
    expect((await fourth.snapshot()).get("sub/b.txt")).toEqual({
      hash: sha256Hex("changed"),
      size: 7,
      exec: false,
    });
    expect(fourth.last?.hashed).toBe(0);
  });

  it("a file changed within the racy window keeps being hashed until its change is older than the window, in this process and the next", async () => {
    const root = workspace({});
    writeFileSync(join(root, "a.txt"), "one!");
    const changed = statSync(join(root, "a.txt")).ctimeMs;
    let clock = changed;
    const tree = new TreeSnapshot({ root, stateDir: join(root, ".harness"), watch: false, now: () => clock });
    await tree.snapshot();
    // Changed again in the same tick, same size, mtime put back: the stat alone cannot tell.
    const mtime = statSync(join(root, "a.txt")).mtime;
    writeFileSync(join(root, "a.txt"), "two!");
    utimesSync(join(root, "a.txt"), mtime, mtime);
    expect((await tree.snapshot()).get("a.txt")).toEqual({ hash: sha256Hex("two!"), size: 4, exec: false });
    tree.save();
    writeFileSync(join(root, "a.txt"), "3ee!");
    utimesSync(join(root, "a.txt"), mtime, mtime);
    const next = new TreeSnapshot({ root, stateDir: join(root, ".harness"), watch: false, now: () => clock });
    expect((await next.snapshot()).get("a.txt")).toEqual({ hash: sha256Hex("3ee!"), size: 4, exec: false });
    expect(next.last?.hashed).toBe(1);
    clock = statSync(join(root, "a.txt")).ctimeMs + 60_000;
    await next.snapshot();
    expect(next.last?.hashed).toBe(1);
    await next.snapshot();
    expect(next.last?.hashed).toBe(0);
  });

  it("a saved entry is trusted only on the same device and inode", async () => {
    const root = workspace({ "a.txt": "a" });
    const first = snapshotter(root);
    await first.snapshot();
    first.save();
    const file = join(root, ".harness/tree-cache.json");
    const cache = JSON.parse(readFileSync(file, "utf8")) as { rows: unknown[][] };
    expect(cache.rows[0]?.[1]).toBe(statSync(join(root, "a.txt")).dev);
    // Another file system with the same inode numbers, as a restored copy or a new mount gives.
    (cache.rows[0] as unknown[])[1] = (cache.rows[0]?.[1] as number) + 1;
    writeFileSync(file, JSON.stringify(cache));
    const second = snapshotter(root);
    await second.snapshot();
    expect(second.last?.hashed).toBe(1);
  });

  it("saves a row a line; a cache written on one line (version 2) is still read, and a torn row costs only its file", async () => {
    const root = workspace({ "a.txt": "a", "b.txt": "b", "c/d.txt": "d" });
    const first = snapshotter(root);
    const manifest = await first.snapshot();
    first.save();
    const file = join(root, ".harness/tree-cache.json");
    const text = readFileSync(file, "utf8");
    const lines = text.split("\n");
    expect(lines).toHaveLength(5);
    const cache = JSON.parse(text) as { version: number; rows: unknown[][] };
    expect(cache.version).toBe(3);
    expect(cache.rows.map((row) => row[0])).toEqual(["a.txt", "b.txt", "c/d.txt"]);

    writeFileSync(file, JSON.stringify({ ...cache, version: 2 }));
    const upgraded = snapshotter(root);
    expect(await upgraded.snapshot()).toEqual(manifest);
    expect(upgraded.last?.hashed).toBe(0);

    writeFileSync(file, [lines[0], lines[1], '["b.txt",1,', lines[3], lines[4]].join("\n"));
    const torn = snapshotter(root);
    expect(await torn.snapshot()).toEqual(manifest);
    expect(torn.last?.hashed).toBe(1);
  });

  it("a cache that cannot be read only costs a rehash", async () => {
    const root = workspace({ "a.txt": "a" });
    mkdirSync(join(root, ".harness"), { recursive: true });
    writeFileSync(join(root, ".harness/tree-cache.json"), "{not json");
    const tree = snapshotter(root);
    expect((await tree.snapshot()).get("a.txt")).toEqual({ hash: sha256Hex("a"), size: 1, exec: false });
    expect(tree.last?.hashed).toBe(1);
  });

  it("leaves out configured excludes: NAME/ at any depth, a/b/ from the root, never .gitignore", async () => {
    const root = workspace({
      "node_modules/x/index.js": "x",
      "pkg/node_modules/y.js": "y",
      "build/out/a.o": "o",
      "other/build/out/b.o": "kept",
      ".gitignore": "ignored.log\n",
      "ignored.log": "still recorded",
    });
    const tree = snapshotter(root, ["node_modules/", "build/out/"]);
    expect([...(await tree.snapshot()).keys()].sort()).toEqual([
      ".gitignore",
      "build",
      "ignored.log",
      "other",
      "other/build",
      "other/build/out",
      "other/build/out/b.o",
      "pkg",
    ]);
    expect(tree.excludes.patterns).toEqual(["/.git/", "/.harness/", "node_modules/", "build/out/"]);
    expect(tree.excludes.excludes("pkg/node_modules/z.js")).toBe(true);
    expect(tree.excludes.excludes("src/a.ts")).toBe(false);
  });
});

describe.each([
  { watch: false, label: "by stat alone" },
  { watch: true, label: "with change notifications" },
])("TreeSnapshot $label", ({ watch }) => {
  it("hashes only what changed, and finds a same-size edit whose mtime was put back (touch -r)", async () => {
    const root = workspace({ "a.txt": "aaaa", "b.txt": "bbbb" });
    const tree = snapshotter(root, [], watch);
    const first = await tree.snapshot();
    expect(tree.last?.hashed).toBe(2);
    expect(await tree.snapshot()).toEqual(first);
    expect(tree.last?.hashed).toBe(0);
    expect(tree.last?.walk).toBe(watch ? "none" : "full");

    const before = statSync(join(root, "a.txt"), { bigint: true });
    const reference = join(workspace({}), "reference");
    execFileSync("touch", ["-r", join(root, "a.txt"), reference]);
    await sleep(30); // past the file system clock's tick, so the write gets a new ctime
    writeFileSync(join(root, "a.txt"), "AAAA");
    execFileSync("touch", ["-r", reference, join(root, "a.txt")]);
    const restored = statSync(join(root, "a.txt"), { bigint: true });
    expect(restored.mtimeNs).toBe(before.mtimeNs);
    expect(restored.size).toBe(before.size);
    expect(restored.ino).toBe(before.ino);
    const after = await tree.snapshot();
    expect(tree.last?.hashed).toBe(1);
    expect(tree.last?.walk).toBe(watch ? "partial" : "full");
    tree.close();
    expect(diffManifests(first, after).modified).toEqual([
      {
        path: "a.txt",
        before: { hash: sha256Hex("aaaa"), size: 4, exec: false },
        after: { hash: sha256Hex("AAAA"), size: 4, exec: false },
      },
    ]);
  });
});

describe("TreeSnapshot with change notifications", () => {
  it("reads nothing when nothing changed, only what changed otherwise, and agrees with a full walk", async () => {
    const root = workspace({ "a/one.txt": "1", "a/deep/two.txt": "2", "b/three.txt": "3", "c.txt": "c" });
    const tree = snapshotter(root, [], true);
    const before = await tree.snapshot();
    await tree.snapshot();
    expect(tree.last).toMatchObject({ walk: "none", hashed: 0 });

    writeFileSync(join(root, "c.txt"), "changed");
    rmSync(join(root, "a/deep"), { recursive: true });
    mkdirSync(join(root, "new/dir"), { recursive: true });
    writeFileSync(join(root, "new/dir/file.txt"), "new");
    execFileSync("mv", [join(root, "b"), join(root, "b2")]);
    writeFileSync(join(root, "b2/four.txt"), "4");
    chmodSync(join(root, "a/one.txt"), 0o755);
    const partial = await tree.snapshot();
    expect(tree.last?.walk).toBe("partial");
    const full = await snapshotter(root).snapshot();
    expect(Object.fromEntries(partial)).toEqual(Object.fromEntries(full));
    expect([...partial.keys()].sort()).toEqual([
      "a",
      "a/one.txt",
      "b2",
      "b2/four.txt",
      "b2/three.txt",
      "c.txt",
      "new",
      "new/dir",
      "new/dir/file.txt",
    ]);
    expect(partial.get("a/one.txt")).toMatchObject({ exec: true });
    // What a partial read says may differ covers everything that does.
    const differs = diffManifests(before, partial);
    const touched = tree.lastTouched ?? new Set<string>();
    for (const { path } of [...differs.created, ...differs.modified, ...differs.deleted])
      expect(touched.has(path)).toBe(true);
    expect(diffManifests(before, partial, touched)).toEqual(differs);

    // A directory created after the last walk is watched too.
    writeFileSync(join(root, "new/dir/file.txt"), "newer");
    expect((await tree.snapshot()).get("new/dir/file.txt")).toEqual({
      hash: sha256Hex("newer"),
      size: 5,
      exec: false,
    });
    expect(tree.last?.walk).toBe("partial");
    tree.close();
  });

  it("a full snapshot reads everything whatever the notifications say", async () => {
    const root = workspace({ "a.txt": "a" });
    const tree = snapshotter(root, [], true);
    await tree.snapshot();
    await tree.snapshot({ full: true });
    expect(tree.last?.walk).toBe("full");
    tree.close();
  });

  it("lets the event loop run while it walks, and takes concurrent snapshots one after the other", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 300; i++) files[`d${i % 10}/f${i}.txt`] = `content ${i}`;
    const root = workspace(files);
    const tree = new TreeSnapshot({
      root,
      stateDir: join(root, ".harness"),
      now: later,
      watch: false,
      sliceMs: 0,
    });
    // A heartbeat that runs whenever the event loop does: a walk that never yields starves it.
    let beats = 0;
    let beating = true;
    const beat = () => {
      beats += 1;
      if (beating) setImmediate(beat);
    };
    setImmediate(beat);
    const [first, second] = await Promise.all([tree.snapshot({ full: true }), tree.snapshot({ full: true })]);
    beating = false;
    expect(beats).toBeGreaterThanOrEqual(300);
    expect(first.size).toBe(310); // 300 files in 10 directories
    expect(second).toEqual(first);
    // The second walk began after the first had hashed everything: it hashed nothing again.
    expect(tree.last?.hashed).toBe(0);
  });
});
