import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createGlobTool, GLOB_MAX_RESULTS } from "../../src/tools/files/glob.js";
import { createGrepTool, GREP_LINE_CHARS } from "../../src/tools/files/grep.js";
import { createDiskFixture, FACTORIES, type FsFixture } from "../workspace/fixtures.js";
import { Session } from "./helpers.js";

const glob = createGlobTool();
const grep = createGrepTool();

describe.each(FACTORIES)("glob and grep on %s", (_name, factory) => {
  let fixture: FsFixture;
  const open = async (files: Record<string, string | Uint8Array>): Promise<Session> => {
    fixture = await factory(files);
    return new Session(fixture.fs);
  };
  afterEach(async () => {
    await fixture.dispose();
  });

  describe("glob", () => {
    it("lists sorted POSIX paths relative to the root and hides .harness", async () => {
      const session = await open({
        "demo/note.txt": "",
        "demo/Zeta.txt": "",
        "demo/sub/deep.txt": "",
        ".harness/journal.txt": "",
        "root.txt": "",
      });
      const all = await session.run(glob, { pattern: "**/*.txt" });
      expect(all.content).toBe("demo/Zeta.txt\ndemo/note.txt\ndemo/sub/deep.txt\nroot.txt");
      expect(all.data).toEqual({ pattern: "**/*.txt", total: 4, truncated: false });
      const scoped = await session.run(glob, { pattern: "*.txt", path: "demo" });
      expect(scoped.content).toBe("demo/Zeta.txt\ndemo/note.txt");
    });

    it("says (no matches) when nothing matches", async () => {
      const session = await open({ "a.txt": "" });
      const out = await session.run(glob, { pattern: "**/*.rs" });
      expect(out.content).toBe("(no matches)");
      expect(out.data).toMatchObject({ total: 0, truncated: false });
    });

    it(`lists at most ${GLOB_MAX_RESULTS} paths and reports the total`, async () => {
      const files = Object.fromEntries(
        Array.from({ length: GLOB_MAX_RESULTS + 20 }, (_, i) => [`f/${String(i).padStart(4, "0")}.txt`, ""]),
      );
      const session = await open(files);
      const out = await session.run(glob, { pattern: "f/*.txt" });
      const lines = out.content.split("\n");
      expect(lines).toHaveLength(GLOB_MAX_RESULTS + 1);
      expect(lines[0]).toBe("f/0000.txt");
      expect(lines[GLOB_MAX_RESULTS - 1]).toBe(`f/${String(GLOB_MAX_RESULTS - 1).padStart(4, "0")}.txt`);
      expect(lines[GLOB_MAX_RESULTS]).toContain(`of ${GLOB_MAX_RESULTS + 20}`);
      expect(out.data).toMatchObject({ total: GLOB_MAX_RESULTS + 20, truncated: true });
    });

    it("refuses escaping and reserved patterns", async () => {
      const session = await open({ "a.txt": "" });
      await session.fail(glob, { pattern: "../*" }, "PATH_ESCAPE");
      await session.fail(glob, { pattern: "*", path: "../" }, "PATH_ESCAPE");
      await session.fail(glob, { pattern: ".harness/**" }, "RESERVED_PATH");
      await session.fail(glob, { pattern: "*", path: "missing" }, "NOT_FOUND");
    });
  });

  describe("grep", () => {
    it("reports path:line:text with files sorted and lines ascending", async () => {
      const session = await open({
        "b.ts": "const x = 1;\nTODO second\n",
        "a/z.ts": "TODO in a/z\n",
        "a.ts": "nothing\nTODO: one\nmore\nTODO: two\n",
      });
      const out = await session.run(grep, { pattern: "TODO" });
      expect(out.content).toBe(
        "a.ts:2:TODO: one\na.ts:4:TODO: two\na/z.ts:1:TODO in a/z\nb.ts:2:TODO second",
      );
      expect(out.data).toEqual({ total: 4, files: 3, truncated: false, skipped_files: 0 });
    });

    it("respects root and nested .gitignore files, with negation", async () => {
      const session = await open({
        ".gitignore": "*.log\nbuild/\n",
        "app.log": "needle\n",
        "build/out.js": "needle\n",
        "src/.gitignore": "generated/\n!keep.log\n",
        "src/keep.log": "needle\n",
        "src/generated/x.ts": "needle\n",
        "src/main.ts": "needle\n",
      });
      const out = await session.run(grep, { pattern: "needle" });
      expect(out.content).toBe("src/keep.log:1:needle\nsrc/main.ts:1:needle");
      const scoped = await session.run(grep, { pattern: "needle", path: "src" });
      expect(scoped.content).toBe("src/keep.log:1:needle\nsrc/main.ts:1:needle");
    });

    it("skips binary and non-UTF-8 files and .harness", async () => {
      const session = await open({
        "bin.dat": new Uint8Array([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0x00, 0x0a]),
        "latin1.txt": new Uint8Array([0x6e, 0x65, 0x65, 0x64, 0x6c, 0x65, 0xe9, 0x0a]),
        ".harness/state.txt": "needle\n",
        "ok.txt": "needle\n",
      });
      const out = await session.run(grep, { pattern: "needle" });
      expect(out.content).toBe("ok.txt:1:needle\n(2 more files would match but are binary or not UTF-8)");
      expect(out.data).toMatchObject({ total: 1, files: 1, skipped_files: 2 });
    });

    it("truncates at max_results but counts every match", async () => {
      const session = await open({ "a.txt": "hit\n".repeat(10), "b.txt": "hit\n".repeat(5) });
      const out = await session.run(grep, { pattern: "^hit$", max_results: 12 });
      const lines = out.content.split("\n");
      expect(lines.slice(0, 12)).toEqual([
        ...Array.from({ length: 10 }, (_, i) => `a.txt:${i + 1}:hit`),
        "b.txt:1:hit",
        "b.txt:2:hit",
      ]);
      expect(lines[12]).toContain("first 12 of 15");
      expect(out.data).toMatchObject({ total: 15, files: 2, truncated: true });
    });

    it("filters with include by name or by path, and matches case-insensitively on request", async () => {
      const session = await open({ "src/a.ts": "Needle\n", "src/b.js": "needle\n", "lib/c.ts": "needle\n" });
      expect((await session.run(grep, { pattern: "needle", include: "*.ts" })).content).toBe(
        "lib/c.ts:1:needle",
      );
      expect(
        (await session.run(grep, { pattern: "needle", include: "src/**", ignore_case: true })).content,
      ).toBe("src/a.ts:1:Needle\nsrc/b.js:1:needle");
    });

    it("searches a single file, cuts long lines, handles CRLF and says (no matches)", async () => {
      const long = `${"a".repeat(GREP_LINE_CHARS + 100)}needle`;
      const session = await open({ "one.txt": `x needle\r\n${long}\n`, "two.txt": "needle\n" });
      const out = await session.run(grep, { pattern: "needle$", path: "one.txt" });
      const lines = out.content.split("\n");
      expect(lines[0]).toBe("one.txt:1:x needle");
      expect(lines[1]).toBe(`one.txt:2:${"a".repeat(GREP_LINE_CHARS)} … [cut]`);
      expect((await session.run(grep, { pattern: "absent" })).content).toBe("(no matches)");
    });

    it("reports invalid regular expressions and bad paths", async () => {
      const session = await open({ "a.txt": "x" });
      await session.fail(grep, { pattern: "(unclosed" }, "INVALID_REGEX");
      await session.fail(grep, { pattern: "x", path: "missing" }, "NOT_FOUND");
      await session.fail(grep, { pattern: "x", path: "../" }, "PATH_ESCAPE");
      await session.fail(grep, { pattern: "x", path: ".harness" }, "RESERVED_PATH");
    });
  });
});

describe("grep with a pattern that backtracks catastrophically", () => {
  // (a+)+$ on "aaaa…a!" takes exponential time in a backtracking engine: minutes at 40 a's. The
  // file's second line matches, so where rg filters the files it names this one.
  const evil = { "slow.txt": `${"a".repeat(40)}!\na\n`, "fine.txt": "needle\n" };

  it("fails REGEX_TOO_SLOW within the budget while the event loop keeps running", async () => {
    const fixture = await createDiskFixture(evil);
    try {
      const session = new Session(fixture.fs);
      let ticks = 0;
      const ticker = setInterval(() => {
        ticks += 1;
      }, 10);
      const started = Date.now();
      try {
        await session.fail(createGrepTool({ matchBudgetMs: 300 }), { pattern: "(a+)+$" }, "REGEX_TOO_SLOW");
      } finally {
        clearInterval(ticker);
      }
      // The main thread was never blocked: the ticker ran during the whole budget.
      expect(ticks).toBeGreaterThan(5);
      expect(Date.now() - started).toBeLessThan(60_000);
    } finally {
      await fixture.dispose();
    }
  });

  it("a cancelled call stops the match at once and reports CANCELLED", async () => {
    const fixture = await createDiskFixture(evil);
    try {
      const session = new Session(fixture.fs);
      setTimeout(() => session.controller.abort(), 100);
      await session.fail(createGrepTool({ matchBudgetMs: 600_000 }), { pattern: "(a+)+$" }, "CANCELLED");
    } finally {
      await fixture.dispose();
    }
  });

  it("the same tool still answers ordinary patterns afterwards", async () => {
    const fixture = await createDiskFixture(evil);
    try {
      const session = new Session(fixture.fs);
      const tool = createGrepTool({ matchBudgetMs: 300 });
      await session.fail(tool, { pattern: "(a+)+$" }, "REGEX_TOO_SLOW");
      const out = await session.run(tool, { pattern: "needle" });
      expect(out.content).toBe("fine.txt:1:needle");
    } finally {
      await fixture.dispose();
    }
  });
});

describe("glob and grep with symlinks on disk", () => {
  it("do not recurse into symlinked directories or leave the workspace", async () => {
    const fixture = await createDiskFixture({ "real/a.txt": "needle\n" });
    try {
      await symlink(path.join(fixture.root, "real"), path.join(fixture.root, "alias"), "dir");
      await symlink(fixture.outside, path.join(fixture.root, "out"), "dir");
      await symlink(path.join(fixture.outside, "secret.txt"), path.join(fixture.root, "secret.txt"));
      await symlink(path.join(fixture.root, "real", "a.txt"), path.join(fixture.root, "inside-link.txt"));
      await mkdir(path.join(fixture.root, ".harness"));
      await writeFile(path.join(fixture.root, ".harness", "x.txt"), "needle\n");
      await symlink(".harness", path.join(fixture.root, "state"), "dir");
      const session = new Session(fixture.fs);
      expect((await session.run(glob, { pattern: "**" })).content).toBe("real/a.txt");
      expect((await session.run(grep, { pattern: "needle|secret" })).content).toBe(
        "inside-link.txt:1:needle\nreal/a.txt:1:needle",
      );
    } finally {
      await fixture.dispose();
    }
  });
});
