import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { HeldDir } from "../../src/workspace/beneath.js";
import { listTree, parseListing, readListing } from "../../src/workspace/tree-list.js";
import { LIST_MIN_ENTRIES, TreeSnapshot } from "../../src/workspace/tree-snapshot.js";

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

const hasFind = process.platform === "linux" && (existsSync("/usr/bin/find") || existsSync("/bin/find"));

/** A tree with the names and kinds a listing must get right. */
function oddTree(): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-list-")));
  roots.push(root);
  const write = (rel: string, content: string) => {
    mkdirSync(join(root, rel, ".."), { recursive: true });
    writeFileSync(join(root, rel), content);
  };
  write("plain.txt", "plain");
  write("with space/and more.txt", "spaces");
  write("new\nline.txt", "newline");
  write("deep/a/b/c.txt", "deep");
  write("exec.sh", "#!/bin/sh\n");
  execFileSync("chmod", ["4755", join(root, "exec.sh")]);
  write(".git/HEAD", "ref");
  write(".harness/tree-cache.json", "{}");
  write("sub/.git/HEAD", "nested repos are recorded");
  write("node_modules/x/index.js", "excluded by name");
  write("build/out/b.o", "excluded by path");
  write("other/build/out/b.o", "not the excluded path");
  mkdirSync(join(root, "empty/dir"), { recursive: true });
  symlinkSync("plain.txt", join(root, "link"));
  symlinkSync("/etc", join(root, "outside"));
  symlinkSync("deep", join(root, "dirlink"));
  execFileSync("mkfifo", [join(root, "pipe")]);
  // A name that is not UTF-8, and a directory of that name with a file in it.
  writeFileSync(Buffer.concat([Buffer.from(`${root}/bad-`), Buffer.from([0xff]), Buffer.from(".txt")]), "x");
  const badDir = Buffer.concat([Buffer.from(`${root}/bad-dir-`), Buffer.from([0xfe])]);
  mkdirSync(badDir);
  writeFileSync(Buffer.concat([badDir, Buffer.from("/inside.txt")]), "y");
  return root;
}

async function listed(root: string) {
  const held = HeldDir.openRoot(root);
  try {
    return await listTree(held.fd, root);
  } finally {
    held.close();
  }
}

describe.runIf(hasFind)("listTree", () => {
  it("gives every entry's stat exactly as lstat does, odd names included, never entering .git or .harness", async () => {
    const root = oddTree();
    const listing = await listed(root);
    expect(listing).toBeDefined();
    const rels = (listing ?? []).map((e) => e.rel);
    expect(rels).toContain("new\nline.txt");
    expect(rels).toContain("with space/and more.txt");
    expect(rels).toContain("sub/.git/HEAD");
    expect(rels).toContain("bad-\ufffd.txt");
    expect(rels).toContain("bad-dir-\ufffd/inside.txt");
    expect(rels.filter((r) => r === ".git" || r.startsWith(".git/") || r.startsWith(".harness"))).toEqual([]);
    // Nothing is followed: a link to a directory is listed as a link, nothing below it.
    expect(rels.filter((r) => r.startsWith("dirlink/") || r.startsWith("outside/"))).toEqual([]);
    let compared = 0;
    for (const entry of listing ?? []) {
      if (entry.rel.includes("\ufffd")) continue;
      const st = lstatSync(join(root, entry.rel));
      expect({ rel: entry.rel, dev: entry.dev, ino: entry.ino, mode: entry.mode, size: entry.size }).toEqual({
        rel: entry.rel,
        dev: st.dev,
        ino: st.ino,
        mode: st.mode,
        size: st.size,
      });
      // The same doubles, so a cached stat compares equal.
      expect(entry.mtimeMs).toBe(st.mtimeMs);
      expect(entry.ctimeMs).toBe(st.ctimeMs);
      compared++;
    }
    expect(compared).toBeGreaterThan(15);
    const kinds = Object.fromEntries((listing ?? []).map((e) => [e.rel, e.type]));
    expect(kinds).toMatchObject({
      pipe: "fifo",
      link: "link",
      dirlink: "link",
      "empty/dir": "dir",
      "exec.sh": "file",
    });
    expect((listing ?? []).find((e) => e.rel === "exec.sh")?.mode).toBe(0o104755);
  });

  it("lists a directory before what it holds, its contents together", async () => {
    const root = oddTree();
    const rels = ((await listed(root)) ?? []).map((e) => e.rel);
    for (const [i, rel] of rels.entries()) {
      const slash = rel.lastIndexOf("/");
      if (slash === -1) continue;
      const parent = rel.slice(0, slash);
      const at = rels.indexOf(parent);
      expect(at).toBeGreaterThanOrEqual(0);
      expect(at).toBeLessThan(i);
      // Everything between the parent and this entry lies below the parent.
      for (const between of rels.slice(at + 1, i)) expect(between.startsWith(`${parent}/`)).toBe(true);
    }
  });

  it("lists in two finds at once, spliced into exactly what one find prints", async () => {
    const root = oddTree();
    // More top-level directories, one a name find would take as a pattern (listed by the first find).
    for (const dir of ["alpha/x", "beta/y/z", "gamma", "w[x]*/q", ".dot/inner"]) {
      mkdirSync(join(root, dir), { recursive: true });
      writeFileSync(join(root, dir, "f.txt"), dir);
    }
    const held = HeldDir.openRoot(root);
    let spliced: Buffer | undefined;
    try {
      spliced = await readListing(held.fd, root);
    } finally {
      held.close();
    }
    const find = existsSync("/usr/bin/find") ? "/usr/bin/find" : "/bin/find";
    const one = execFileSync(
      find,
      [
        "-P",
        ".",
        "-mindepth",
        "1",
        "(",
        "-path",
        "./.git",
        "-o",
        "-path",
        "./.harness",
        ")",
        "-prune",
        "-o",
        "-printf",
        "%y %D %i %m %s %T@ %C@ %P\\0",
      ],
      { cwd: root, env: { LC_ALL: "C", PATH: "/usr/bin:/bin" } },
    );
    expect(spliced?.equals(one)).toBe(true);
  });

  it("refuses output not of find's shape rather than guess", () => {
    const good = "f 1 2 644 5 1700000000.1234567890 1700000000.1234567890 a.txt\0";
    expect(parseListing(Buffer.from(good))?.[0]).toEqual({
      rel: "a.txt",
      type: "file",
      dev: 1,
      ino: 2,
      mode: 0o100644,
      size: 5,
      mtimeMs: 1700000000 * 1000 + 123456789 / 1e6,
      ctimeMs: 1700000000 * 1000 + 123456789 / 1e6,
    });
    for (const bad of [
      "f 1 2 644 5 1700000000.1234567890 1700000000.1234567890 a.txt", // no NUL
      "x 1 2 644 5 1700000000.1234567890 1700000000.1234567890 a.txt\0", // unknown type
      "f 1 2 649 5 1700000000.1234567890 1700000000.1234567890 a.txt\0", // not octal
      "f 1 2 644 5 -1.1234567890 1700000000.1234567890 a.txt\0", // before 1970
      "f 1 2 644 5 1700000000.12 1700000000.1234567890 a.txt\0", // not nanoseconds
      "f 1 2 644 5 1700000000.1234567890 1700000000.1234567890 \0", // no name
      "f 1 2 644 5 1700000000.1234567890 1700000000.1234567890 /abs\0",
    ])
      expect(parseListing(Buffer.from(bad)), JSON.stringify(bad)).toBeUndefined();
  });
});

/** A clock well after every file's ctime: no entry is "racy", so only a stat change causes a rehash. */
const later = () => Date.now() + 60_000;
const excludes = ["node_modules/", "build/out/"];

/** A snapshotter that lists with find whatever the tree's size (`listMinEntries` 0), unless told otherwise. */
function snapshotter(root: string, watch = true, listMinEntries = 0) {
  return new TreeSnapshot({
    root,
    stateDir: join(root, ".harness"),
    excludes,
    now: later,
    watch,
    listMinEntries,
  });
}

/** The walk in JavaScript: a first snapshot that is not `full`, with watches, never uses a listing. */
async function walked(root: string) {
  const tree = snapshotter(root);
  try {
    const manifest = await tree.snapshot();
    expect(tree.last?.listed).toBeUndefined();
    return { manifest, skipped: [...(tree.last?.skipped ?? [])].sort() };
  } finally {
    tree.close();
  }
}

describe.runIf(hasFind)("TreeSnapshot from find's listing", () => {
  it("records what the walk records, and reads only files whose stat changed", async () => {
    const root = oddTree();
    const first = snapshotter(root);
    await first.snapshot();
    first.save();
    first.close();

    // Changed since the cache was saved: an edit of the same size with its mtime put back, a new
    // file in a new directory, a file replaced by a link, a link retargeted, a file removed.
    const before = statSync(join(root, "plain.txt"));
    writeFileSync(join(root, "plain.txt"), "PLAIN");
    utimesSync(join(root, "plain.txt"), before.atime, before.mtime);
    mkdirSync(join(root, "fresh"));
    writeFileSync(join(root, "fresh/new.txt"), "new");
    unlinkSync(join(root, "deep/a/b/c.txt"));
    symlinkSync("../../../plain.txt", join(root, "deep/a/b/c.txt"));
    unlinkSync(join(root, "link"));
    symlinkSync("exec.sh", join(root, "link"));
    rmSync(join(root, "with space/and more.txt"));

    const tree = snapshotter(root);
    const manifest = await tree.snapshot({ full: true });
    expect(tree.last?.listed).toBe(true);
    // plain.txt (ctime moved), fresh/new.txt, the two links: nothing else is read.
    expect(tree.last?.hashed).toBe(4);
    expect(manifest.get("plain.txt")).toEqual({
      hash: sha256Hex(Buffer.from("PLAIN")),
      size: 5,
      exec: false,
    });
    expect(manifest.get("deep/a/b/c.txt")).toEqual({ link: "../../../plain.txt" });
    expect(manifest.get("link")).toEqual({ link: "exec.sh" });
    expect(manifest.has("with space/and more.txt")).toBe(false);
    expect(manifest.get("pipe")).toEqual({ special: "fifo" });
    expect(manifest.get("sub/.git/HEAD")).toBeDefined();
    expect(manifest.has("node_modules")).toBe(false);
    expect(manifest.has("build/out")).toBe(false);
    expect(manifest.has("other/build/out/b.o")).toBe(true);
    const skipped = [...(tree.last?.skipped ?? [])].sort();
    expect(skipped).toEqual(["bad-dir-\ufffd", "bad-\ufffd.txt"]);

    const reference = await walked(root);
    expect(new Map([...manifest].sort())).toEqual(new Map([...reference.manifest].sort()));
    expect(skipped).toEqual(reference.skipped);

    // Nothing was watched: the next snapshot reads the whole tree again, and sets the watches.
    writeFileSync(join(root, "fresh/new.txt"), "newer");
    const next = await tree.snapshot();
    expect(tree.last?.walk).toBe("full");
    expect(tree.last?.listed).toBeUndefined();
    expect(next.get("fresh/new.txt")).toEqual({
      hash: sha256Hex(Buffer.from("newer")),
      size: 5,
      exec: false,
    });
    // Watched now: a full snapshot walks (keeping the watches) instead of listing.
    await tree.snapshot({ full: true });
    expect(tree.last?.listed).toBeUndefined();
    tree.close();
  });

  it("keeps the racy rule: an entry hashed within a tick of its change is read again", async () => {
    const root = oddTree();
    // The real clock: every file was just written, so each hash is racy and never saved.
    const first = new TreeSnapshot({
      root,
      stateDir: join(root, ".harness"),
      excludes,
      watch: true,
      listMinEntries: 0,
    });
    await first.snapshot();
    first.save();
    first.close();
    writeFileSync(join(root, "plain.txt"), "again");
    const tree = new TreeSnapshot({
      root,
      stateDir: join(root, ".harness"),
      excludes,
      watch: true,
      listMinEntries: 0,
    });
    const manifest = await tree.snapshot({ full: true });
    // Whatever was listed, a file not in the saved cache is read: the new content is what is recorded.
    expect(manifest.get("plain.txt")).toEqual({
      hash: sha256Hex(Buffer.from("again")),
      size: 5,
      exec: false,
    });
    tree.close();
  });

  it("lists only a tree whose saved cache holds at least listMinEntries entries; a smaller one is walked here", async () => {
    const root = oddTree();
    const first = snapshotter(root);
    await first.snapshot();
    first.save();
    first.close();
    const cached = readFileSync(join(root, ".harness", "tree-cache.json"), "utf8").split("\n").length;

    // The default: this tree is far below LIST_MIN_ENTRIES, so no find is started for it (a fork of
    // the whole process, which a server's other sessions would wait for).
    expect(cached).toBeLessThan(LIST_MIN_ENTRIES);
    const small = new TreeSnapshot({ root, stateDir: join(root, ".harness"), excludes, now: later });
    const walkedHere = await small.snapshot({ full: true });
    expect(small.last?.listed).toBeUndefined();
    expect(small.last?.walk).toBe("full");
    small.close();

    // A threshold the cache reaches: listed, with the same manifest.
    const large = snapshotter(root, true, 3);
    const listedThere = await large.snapshot({ full: true });
    expect(large.last?.listed).toBe(true);
    expect(new Map([...listedThere].sort())).toEqual(new Map([...walkedHere].sort()));
    large.close();

    // A threshold above what the cache holds: walked again, in this process too (cache loaded).
    const above = snapshotter(root, false, 100_000);
    await above.snapshot({ full: true });
    expect(above.last?.listed).toBeUndefined();
    await above.snapshot({ full: true });
    expect(above.last?.listed).toBeUndefined();
    above.close();
  });

  it("without a saved cache (a first walk) walks in JavaScript", async () => {
    const root = oddTree();
    const tree = snapshotter(root);
    await tree.snapshot({ full: true });
    expect(tree.last?.listed).toBeUndefined();
    tree.close();
  });
});
