import { readFileSync } from "node:fs";
import { chmod, mkdir, readFile, stat, symlink, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SessionGrants } from "../../src/policy/grants.js";
import { pathResolverOf } from "../../src/policy/path-aliases.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import { readAccess } from "../../src/runtime/authorize.js";
import { createGrepTool, GREP_LINE_CHARS, type GrepOptions } from "../../src/tools/files/grep.js";
import { locateRipgrep } from "../../src/tools/files/search/ripgrep.js";
import type { ToolOutput } from "../../src/tools/tool.js";
import { createDiskFixture, type DiskFixture, type FsFixture, memoryFactory } from "../workspace/fixtures.js";
import { Session } from "./helpers.js";

/**
 * One contract for every way grep finds its files: ripgrep as the pre-filter (required: this
 * instance fails where rg is not installed, as in a CI without it), the JavaScript walk and
 * matcher on disk, and the same on an in-memory workspace. Each case states the exact output.
 */
type Engine = { name: string; options: GrepOptions; disk: boolean };
const ENGINES: Engine[] = [
  { name: "ripgrep on disk", options: { engine: "ripgrep" }, disk: true },
  // rg walks the directory itself for every file (a large tree's rest, made to happen here).
  {
    name: "ripgrep walking the tree",
    options: { engine: "ripgrep", treeSearch: { afterFiles: 0, minFiles: 1 } },
    disk: true,
  },
  { name: "javascript on disk", options: { engine: "javascript" }, disk: true },
  { name: "javascript in memory", options: { engine: "javascript" }, disk: false },
];

const TREE: Record<string, string | Uint8Array> = {
  "b.ts": "const x = 1;\nTODO second\n",
  "a/z.ts": "TODO in a/z\nfunction   main() {}\n",
  "a.ts": "nothing\nTODO: one\nmore\nTODO: two\nfunction main(argv) {\n",
  "crlf.txt": "x needle\r\nplain needle\r\n",
  "bom.txt": "\uFEFFneedle at the start\n",
  "long.txt": `${"a".repeat(GREP_LINE_CHARS + 100)}needle\n`,
  "Upper.md": "NEEDLE loud\n",
  "sub/.harness/kept.txt": "needle in a nested .harness\n",
  "bin.dat": new Uint8Array([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0x00, 0x0a]),
  "latin1.txt": new Uint8Array([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0xe9, 0x0a]),
  "late-nul.txt": `${"x\n".repeat(5000)}needle late\n\0\n`,
  ".gitignore": "*.log\nbuild/\n",
  "app.log": "needle\n",
  "build/out.js": "needle\n",
  "src/.gitignore": "generated/\n!keep.log\n",
  "src/keep.log": "needle\n",
  "src/generated/x.ts": "needle\n",
  "src/main.ts": "needle\n",
  ".hidden/h.txt": "needle hidden\n",
  ".git/config": "needle in git\n",
  ".harness/state.txt": "needle in state\n",
  ".env": "TOKEN=needle\n",
  "secret/key.txt": "needle secret\n",
};

describe.each(ENGINES)("grep contract: $name", ({ options, disk }) => {
  let fixture: FsFixture;
  let session: Session;
  const tool = createGrepTool(options);
  const permissions = modePolicy({ deny: ["read_file(secret/**)"] });
  const grants = new SessionGrants();
  const open = async (files: Record<string, string | Uint8Array>): Promise<Session> => {
    fixture = disk ? await createDiskFixture(files) : await memoryFactory(files);
    session = new Session(fixture.fs);
    return session;
  };
  const grep = async (args: Record<string, unknown>, policed = true): Promise<ToolOutput> => {
    const parsed = tool.input.parse(args);
    tool.validate?.(parsed);
    const context = policed
      ? {
          ...session.context,
          readAccess: (file: string, access?: { canonical?: boolean }) =>
            readAccess(file, { permissions, grants }, access),
        }
      : session.context;
    return tool.execute(parsed, context);
  };
  afterEach(async () => {
    await fixture.dispose();
  });

  it("reports the same files, lines and order for literals and regular expressions", async () => {
    await open(TREE);
    const todo = await grep({ pattern: "TODO" });
    expect(todo.content).toBe(
      "a.ts:2:TODO: one\na.ts:4:TODO: two\na/z.ts:1:TODO in a/z\nb.ts:2:TODO second\n" +
        "(2 files not searched: the policy does not let read_file read them without an approval)",
    );
    expect(todo.data).toEqual({ total: 4, files: 3, truncated: false, skipped_files: 0, withheld_files: 2 });
    expect((await grep({ pattern: "function\\s+main\\(" })).content.split("\n").slice(0, 2)).toEqual([
      "a.ts:5:function main(argv) {",
      "a/z.ts:2:function   main() {}",
    ]);
    // No literal every match needs: every listed file is searched by the JavaScript matcher.
    expect((await grep({ pattern: "^T\\w+:" })).content.split("\n").slice(0, 2)).toEqual([
      "a.ts:2:TODO: one",
      "a.ts:4:TODO: two",
    ]);
  });

  it("applies .gitignore (root, nested, negation, above the start), skips .git and the root .harness", async () => {
    await open(TREE);
    const lines = (await grep({ pattern: "needle" }, false)).content.split("\n");
    expect(lines).toEqual([
      ".env:1:TOKEN=needle",
      ".hidden/h.txt:1:needle hidden",
      "bom.txt:1:\uFEFFneedle at the start",
      "crlf.txt:1:x needle",
      "crlf.txt:2:plain needle",
      "late-nul.txt:5001:needle late",
      `long.txt:1:${"a".repeat(GREP_LINE_CHARS)} … [cut]`,
      "secret/key.txt:1:needle secret",
      "src/keep.log:1:needle",
      "src/main.ts:1:needle",
      "sub/.harness/kept.txt:1:needle in a nested .harness",
      "(2 more files would match but are binary or not UTF-8)",
    ]);
    expect((await grep({ pattern: "needle", path: "src" }, false)).content).toBe(
      "src/keep.log:1:needle\nsrc/main.ts:1:needle",
    );
  });

  it("matches lines without their \\r, anchors at line ends, case-insensitively on request, with include", async () => {
    await open(TREE);
    expect((await grep({ pattern: "needle$", include: "*.txt" })).content).toBe(
      "crlf.txt:1:x needle\ncrlf.txt:2:plain needle\n" +
        `long.txt:1:${"a".repeat(GREP_LINE_CHARS)} … [cut]\n` +
        "(1 file not searched: the policy does not let read_file read it without an approval)",
    );
    expect((await grep({ pattern: "^\uFEFFneedle", path: "bom.txt" })).content).toBe(
      "bom.txt:1:\uFEFFneedle at the start",
    );
    expect((await grep({ pattern: "needle loud", ignore_case: true }, false)).content).toBe(
      "Upper.md:1:NEEDLE loud",
    );
    expect((await grep({ pattern: "needle", include: "src/**" }, false)).content).toBe(
      "src/keep.log:1:needle\nsrc/main.ts:1:needle",
    );
    expect((await grep({ pattern: "TODO", max_results: 1 }, false)).content).toBe(
      "a.ts:2:TODO: one\n(showing the first 1 of 4 matching lines in 3 files; narrow the pattern, path or include, or raise max_results up to 2000)",
    );
  });

  it("never searches files read_file may not read, and the count does not depend on their content", async () => {
    await open(TREE);
    const found = await grep({ pattern: "needle", include: "*.txt" });
    expect(found.content).not.toContain("secret");
    expect(found.content).not.toContain(".env");
    const absent = await grep({ pattern: "no such text anywhere" });
    const present = await grep({ pattern: "TOKEN=needle" });
    expect(absent.data).toMatchObject({ total: 0, withheld_files: 2 });
    expect(present.data).toEqual(absent.data);
    expect(present.content).toBe(absent.content);
  });

  it("fails REGEX_TOO_SLOW for a catastrophic pattern and answers the next call", async () => {
    await open({ "slow.txt": `x${"a".repeat(40)}!\nxa\n`, "fine.txt": "needle\n" });
    const slow = createGrepTool({ ...options, matchBudgetMs: 300 });
    const started = Date.now();
    await session.fail(slow, { pattern: "x(a+)+$" }, "REGEX_TOO_SLOW");
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await session.run(slow, { pattern: "needle" })).content).toBe("fine.txt:1:needle");
  });

  it("stops when cancelled, without waiting for the match budget", async () => {
    await open({ "slow.txt": `x${"a".repeat(40)}!\nxa\n` });
    let cancelledAt = 0;
    setTimeout(() => {
      cancelledAt = Date.now();
      session.controller.abort();
    }, 150);
    await session.fail(
      createGrepTool({ ...options, matchBudgetMs: 600_000 }),
      { pattern: "x(a+)+$" },
      "CANCELLED",
    );
    // Far below the 600 s budget: the call stopped on the signal, not at the budget's end. The
    // bound is loose so a loaded machine's scheduling cannot fail it.
    expect(Date.now() - cancelledAt).toBeLessThan(5_000);
  });
});

describe.each(ENGINES)("grep contract, where the regex dialects differ: $name", ({ options, disk }) => {
  let fixture: FsFixture | undefined;
  afterEach(async () => {
    await fixture?.dispose();
    fixture = undefined;
  });
  const grep = async (files: Record<string, string | Uint8Array>, args: Record<string, unknown>) => {
    await fixture?.dispose();
    fixture = disk ? await createDiskFixture(files) : await memoryFactory(files);
    const tool = createGrepTool(options);
    const parsed = tool.input.parse(args);
    tool.validate?.(parsed);
    return tool.execute(parsed, new Session(fixture.fs).context);
  };
  const UNICODE = {
    "emoji.txt": "a\u{1F600}b\nab\n",
    "bom.txt": "\uFEFFneedle\n",
    "word.txt": "\u00e9foo\nxfoo\n",
    "ecole.txt": "\u00c9COLE\n",
    "eof-cr.txt": "last needle\r",
    "digits.txt": "\u0661\u0662\n",
  };

  it("gives JavaScript's answer where rg's dialect means something else", async () => {
    // `.` is a UTF-16 code unit in JavaScript: two of them match one emoji.
    expect((await grep(UNICODE, { pattern: "a..b" })).content).toBe("emoji.txt:1:a\u{1F600}b");
    // JavaScript's \s includes U+FEFF, rg's does not.
    expect((await grep(UNICODE, { pattern: "^\\sneedle" })).content).toBe("bom.txt:1:\uFEFFneedle");
    // \b and \W are ASCII in JavaScript: "é" is not a word character there.
    expect((await grep(UNICODE, { pattern: "\\bfoo" })).content).toBe("word.txt:1:\u00e9foo");
    expect((await grep(UNICODE, { pattern: "\\Wfoo" })).content).toBe("word.txt:1:\u00e9foo");
    // \D is narrower in rg (Unicode digits), \d wider: JavaScript decides.
    expect((await grep(UNICODE, { pattern: "^\\D\\D$", include: "digits.txt" })).content).toBe(
      "digits.txt:1:\u0661\u0662",
    );
    expect((await grep(UNICODE, { pattern: "\\d" })).content).toBe("(no matches)");
    // A last line ending in "\r" without "\n": JavaScript's $ is before the "\r".
    expect((await grep(UNICODE, { pattern: "t needle$" })).content).toBe("eof-cr.txt:1:last needle");
    expect((await grep(UNICODE, { pattern: "\u00e9cole", ignore_case: true })).content).toBe(
      "ecole.txt:1:\u00c9COLE",
    );
    // Lookaround and backreferences rg lacks: matched in JavaScript alone.
    expect((await grep(UNICODE, { pattern: "x(?=foo)" })).content).toBe("word.txt:2:xfoo");
    expect((await grep({ "r.txt": "abab\nabba\n" }, { pattern: "(ab)\\1" })).content).toBe("r.txt:1:abab");
    // rg compiles this too large and refuses it: JavaScript answers.
    expect((await grep({ "r.txt": "xx\n" }, { pattern: "(?:x{1000}){1000}|xx" })).content).toBe("r.txt:1:xx");
    // A brace JavaScript takes literally, and escapes rg would refuse.
    expect((await grep({ "r.txt": "a{,2} a/b\n" }, { pattern: "a{,2} a\\/b" })).content).toBe(
      "r.txt:1:a{,2} a/b",
    );
  });

  it("counts a binary file that would match, and shows nothing of it", async () => {
    const out = await grep(
      { "bin.dat": new Uint8Array([0x68, 0x69, 0x00, 0x0a]), "t.txt": "hi\n" },
      { pattern: "h." },
    );
    expect(out.content).toBe("t.txt:1:hi\n(1 more file would match but is binary or not UTF-8)");
  });

  it("stops at the result limit on a large tree, in file order, and says the search stopped", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 700; i++) files[`f${String(i).padStart(4, "0")}.txt`] = "hit one\nhit two\n";
    const out = await grep(files, { pattern: "hit \\w+", max_results: 3 });
    expect(out.content).toBe(
      "f0000.txt:1:hit one\nf0000.txt:2:hit two\nf0001.txt:1:hit one\n" +
        "(showing the first 3 matching lines; the search stopped there and more files may match; " +
        "narrow the pattern, path or include, or raise max_results up to 2000)",
    );
    // Only the first chunk of files was searched.
    expect(out.data).toEqual({
      total: 512,
      files: 256,
      truncated: true,
      skipped_files: 0,
      stopped_early: true,
    });
    // Without a limit reached every file is searched and counted.
    const all = await grep(files, { pattern: "hit two", max_results: 2000 });
    expect(all.data).toEqual({ total: 700, files: 700, truncated: false, skipped_files: 0 });
  });
});

describe.each(ENGINES.filter((engine) => engine.disk))("grep contract on disk: $name", ({ options }) => {
  it("never leaves the workspace through a symlink, and searches links to files inside it", async () => {
    const fixture = await createDiskFixture({ "real/a.txt": "needle\n" });
    try {
      await writeFile(path.join(fixture.outside, "dir.txt"), "needle outside\n");
      await symlink(path.join(fixture.root, "real"), path.join(fixture.root, "alias"), "dir");
      await symlink(fixture.outside, path.join(fixture.root, "out"), "dir");
      await symlink(path.join(fixture.outside, "secret.txt"), path.join(fixture.root, "secret.txt"));
      await symlink(path.join(fixture.root, "real", "a.txt"), path.join(fixture.root, "inside-link.txt"));
      await mkdir(path.join(fixture.root, ".harness"));
      await writeFile(path.join(fixture.root, ".harness", "x.txt"), "needle\n");
      await symlink(".harness", path.join(fixture.root, "state"), "dir");
      const out = await new Session(fixture.fs).run(createGrepTool(options), { pattern: "needle|secret" });
      expect(out.content).toBe("inside-link.txt:1:needle\nreal/a.txt:1:needle");
      const literal = await new Session(fixture.fs).run(createGrepTool(options), { pattern: "needle" });
      expect(literal.content).toBe("inside-link.txt:1:needle\nreal/a.txt:1:needle");
    } finally {
      await fixture.dispose();
    }
  });
});

describe.each(ENGINES.filter((engine) => engine.disk))("grep's read policy on disk: $name", ({ options }) => {
  it("decides listed files as written, resolving only links, which are decided by where they lead", async () => {
    const fixture = await createDiskFixture({
      "real/a.txt": "needle\n",
      "real/b.txt": "needle b\n",
      ".env": "TOKEN=needle\n",
      "secret/key.txt": "needle secret\n",
    });
    try {
      await writeFile(path.join(fixture.outside, "secret.txt"), "needle outside\n");
      await symlink(path.join(fixture.outside, "secret.txt"), path.join(fixture.root, "outside.txt"));
      await symlink(path.join(fixture.root, "secret", "key.txt"), path.join(fixture.root, "key-link.txt"));
      await symlink(".env", path.join(fixture.root, "env-link.txt"));
      await symlink(path.join("real", "a.txt"), path.join(fixture.root, "a-link.txt"));
      const resolver = pathResolverOf(fixture.fs);
      const resolved: string[] = [];
      const permissions = modePolicy({ deny: ["read_file(secret/**)"] }, undefined, async (file) => {
        resolved.push(file);
        return resolver(file);
      });
      const grants = new SessionGrants();
      const session = new Session(fixture.fs);
      const context = {
        ...session.context,
        readAccess: (file: string, access?: { canonical?: boolean }) =>
          readAccess(file, { permissions, grants }, access),
      };
      const tool = createGrepTool(options);
      const run = (pattern: string) => tool.execute(tool.input.parse({ pattern }), context);
      for (const pattern of ["needle", "need?le|secret"]) {
        const out = await run(pattern);
        // The link to the outside is never listed; the links to a denied file and to .env (which
        // needs an approval) are withheld like the files themselves; the link inside is searched.
        expect(out.content).toBe(
          "a-link.txt:1:needle\nreal/a.txt:1:needle\nreal/b.txt:1:needle b\n" +
            "(4 files not searched: the policy does not let read_file read them without an approval)",
        );
        expect(out.data).toMatchObject({ total: 3, files: 3, withheld_files: 4 });
      }
      // Only the links were resolved: the files the walk listed are decided as written.
      expect([...new Set(resolved)].sort()).toEqual(["a-link.txt", "env-link.txt", "key-link.txt"]);
      // read_file's own decision on a link still resolves it.
      expect(await readAccess("key-link.txt", { permissions, grants })).toBe("denied");
    } finally {
      await fixture.dispose();
    }
  });
});

describe("grep through ripgrep walking the tree", () => {
  const WALKING: GrepOptions = { engine: "ripgrep", treeSearch: { afterFiles: 0, minFiles: 1 } };
  const OLD = new Date("2000-01-01T00:00:00Z");

  /** A stand-in rg that records its arguments and runs the real one. */
  async function recordingRg(base: string): Promise<{ path: string; argv: () => Promise<string[]> }> {
    const rg = locateRipgrep();
    if (rg === undefined) throw new Error("rg is not installed (scripts/test-prerequisites.mjs installs it)");
    const fake = path.join(base, "recording-rg");
    const record = path.join(base, "rg-argv.txt");
    await writeFile(fake, `#!/bin/sh\nprintf '%s\\n' "$@" >> '${record}'\nexec '${rg}' "$@"\n`);
    await chmod(fake, 0o755);
    return { path: fake, argv: async () => (await readFile(record, "utf8")).split("\n") };
  }

  /** grep walking the tree with the default policy plus a deny on secret/**. */
  async function walkingGrep(fixture: DiskFixture, rg: string, pattern: string): Promise<ToolOutput> {
    const permissions = modePolicy({ deny: ["read_file(secret/**)"] });
    const grants = new SessionGrants();
    const context = {
      ...new Session(fixture.fs).context,
      readAccess: (file: string, access?: { canonical?: boolean }) =>
        readAccess(file, { permissions, grants }, access),
    };
    const tool = createGrepTool({ ...WALKING, ripgrepPath: rg });
    return tool.execute(tool.input.parse({ pattern }), context);
  }

  /** Read access time put far before the modification time: reading the file moves it (relatime). */
  const ageAccess = (file: string) => utimes(file, OLD, new Date());
  const accessed = async (file: string) => (await stat(file)).atimeMs > OLD.getTime();

  it("leaves out what the walk left out and every withheld file, whose bytes rg never reads", async () => {
    const fixture = await createDiskFixture({
      "a.txt": "needle\n",
      "control.txt": "nothing to see\n",
      ".gitignore": "ignored/\n",
      "ignored/x.txt": "needle ignored\n",
      ".env": "TOKEN=needle\n",
      "secret/w[x] {y} !z#.txt": "needle secret\n",
    });
    try {
      const rg = await recordingRg(fixture.base);
      const withheld = [".env", "secret/w[x] {y} !z#.txt"].map((file) => path.join(fixture.root, file));
      for (const file of [...withheld, path.join(fixture.root, "control.txt")]) await ageAccess(file);
      const out = await walkingGrep(fixture, rg.path, "need+le");
      expect(out.content).toBe(
        "a.txt:1:needle\n(2 files not searched: the policy does not let read_file read them without an approval)",
      );
      const argv = await rg.argv();
      // rg walked the root itself: no file was named, every withheld one was left out by a glob.
      expect(argv.slice(argv.indexOf("--") + 1).filter(Boolean)).toEqual(["./"]);
      expect(argv).toEqual(
        expect.arrayContaining([
          "--glob=!/.env",
          "--glob=!/secret/w\\[x\\]\\ \\{y\\}\\ \\!z#.txt",
          "--glob=!/ignored/",
        ]),
      );
      // rg read the tree (the control file, which nothing matched, was opened) but not a withheld file.
      expect(await accessed(path.join(fixture.root, "control.txt"))).toBe(true);
      for (const file of withheld) expect(await accessed(file)).toBe(false);
    } finally {
      await fixture.dispose();
    }
  });

  it("names the files one by one when a file left out has a name no glob can hold", async () => {
    // A line break: no tool can address the name, so the walk leaves the file out.
    const fixture = await createDiskFixture({
      "a.txt": "needle\n",
      "new\nline.txt": "needle secret\n",
    });
    try {
      const rg = await recordingRg(fixture.base);
      const secret = path.join(fixture.root, "new\nline.txt");
      await ageAccess(secret);
      const out = await walkingGrep(fixture, rg.path, "need+le");
      expect(out.content).toBe("a.txt:1:needle");
      const argv = await rg.argv();
      expect(argv.slice(argv.indexOf("--") + 1).filter(Boolean)).toEqual(["./a.txt"]);
      expect(argv.some((arg) => arg.startsWith("--glob"))).toBe(false);
      expect(await accessed(secret)).toBe(false);
    } finally {
      await fixture.dispose();
    }
  });
});

describe("grep through ripgrep", () => {
  it("reads only the files rg names (plus links), handing rg the rewritten expression and the listed files", async () => {
    const fixture = await createDiskFixture({ "a.txt": "function main\n", "b.txt": "function main\n" });
    try {
      // A stand-in rg that records its arguments and names only b.txt.
      const fake = path.join(fixture.base, "fake-rg");
      const record = path.join(fixture.base, "argv.txt");
      await writeFile(fake, `#!/bin/sh\nprintf '%s\\n' "$@" > '${record}'\nprintf './b.txt\\0'\n`);
      await chmod(fake, 0o755);
      const tool = createGrepTool({ engine: "ripgrep", ripgrepPath: fake });
      const out = await new Session(fixture.fs).run(tool, { pattern: "function\\s+main" });
      expect(out.content).toBe("b.txt:1:function main");
      const argv = (await readFile(record, "utf8")).split("\n");
      expect(argv.slice(argv.indexOf("-e"), argv.indexOf("-e") + 5)).toEqual([
        "-e",
        "function[\\s\\x{FEFF}]+main",
        "--",
        "./a.txt",
        "./b.txt",
      ]);
    } finally {
      await fixture.dispose();
    }
  });

  it("a cancelled call kills rg's process tree, without waiting for it", async () => {
    const fixture = await createDiskFixture({ "a.txt": "needle\n" });
    try {
      const fake = path.join(fixture.base, "slow-rg");
      const pids = path.join(fixture.base, "pids.txt");
      // rg that never answers, with a child of its own.
      await writeFile(fake, `#!/bin/sh\nsleep 30 &\necho "$$ $!" > '${pids}'\nwait\n`);
      await chmod(fake, 0o755);
      const session = new Session(fixture.fs);
      const tool = createGrepTool({ engine: "ripgrep", ripgrepPath: fake });
      let cancelledAt = 0;
      const running = session.fail(tool, { pattern: "needle" }, "CANCELLED");
      while ((await readFile(pids, "utf8").catch(() => "")) === "")
        await new Promise((r) => setTimeout(r, 10));
      cancelledAt = Date.now();
      session.controller.abort();
      await running;
      // Far below the fake rg's 30 s: the call did not wait for it (loose, for a loaded machine).
      expect(Date.now() - cancelledAt).toBeLessThan(5_000);
      const [shell, sleeper] = (await readFile(pids, "utf8")).trim().split(" ").map(Number);
      // Gone, or a zombie waiting for its parent to collect it: either way it runs no more.
      const alive = (pid: number | undefined): boolean => {
        try {
          return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
        } catch {
          return false;
        }
      };
      await new Promise((r) => setTimeout(r, 50));
      expect(alive(shell)).toBe(false);
      expect(alive(sleeper)).toBe(false);
    } finally {
      await fixture.dispose();
    }
  });

  it("a failing rg is an error in ripgrep mode; auto searches every file instead", async () => {
    const fixture = await createDiskFixture({ "a.txt": "needle\n" });
    try {
      const fake = path.join(fixture.base, "broken-rg");
      await writeFile(fake, "#!/bin/sh\necho boom >&2\nexit 2\n");
      await chmod(fake, 0o755);
      const session = new Session(fixture.fs);
      const strict = createGrepTool({ engine: "ripgrep", ripgrepPath: fake });
      await expect(session.run(strict, { pattern: "needle" })).rejects.toThrow(/rg exited with 2: boom/);
      const auto = createGrepTool({ ripgrepPath: fake });
      expect((await session.run(auto, { pattern: "needle" })).content).toBe("a.txt:1:needle");
    } finally {
      await fixture.dispose();
    }
  });
});
