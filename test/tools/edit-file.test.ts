import { afterEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { createEditFileTool } from "../../src/tools/files/edit-file.js";
import { createReadFileTool } from "../../src/tools/files/read-file.js";
import { createWriteFileTool } from "../../src/tools/files/write-file.js";
import type { WorkspaceFs } from "../../src/workspace/fs.js";
import { FACTORIES, type FsFixture, text, utf8 } from "../workspace/fixtures.js";
import { Session } from "./helpers.js";

const readFile = createReadFileTool();
const editFile = createEditFileTool();
const writeFile = createWriteFileTool();

describe.each(FACTORIES)("edit_file on %s", (_name, factory) => {
  let fixture: FsFixture;
  /** Open a workspace and read `path` first, as the model must. */
  const openAndRead = async (
    files: Record<string, string | Uint8Array>,
    path = "a.txt",
  ): Promise<Session> => {
    fixture = await factory(files);
    const session = new Session(fixture.fs);
    if (path in files) await session.run(readFile, { path });
    return session;
  };
  const bytesOf = async (path = "a.txt"): Promise<Uint8Array | undefined> => (await fixture.files())[path];
  afterEach(async () => {
    await fixture.dispose();
  });

  it("replaces the single exact occurrence and shows a diff", async () => {
    const session = await openAndRead({ "a.txt": "alpha\nbeta\ngamma\n" });
    const out = await session.run(editFile, { path: "a.txt", old_text: "beta", new_text: "BETA" });
    expect(text(await bytesOf())).toBe("alpha\nBETA\ngamma\n");
    expect(out.data).toEqual({
      path: "a.txt",
      version: sha256Hex(Buffer.from("alpha\nBETA\ngamma\n")),
      bytes: 17,
      replacements: 1,
      diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n",
    });
    // The model reads the same unified diff the result records.
    expect(out.content).toContain("@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma");
    expect(out.content).toContain("17 UTF-8 bytes");
  });

  it("refuses an ambiguous old_text with the count and lines, leaving the file", async () => {
    const session = await openAndRead({ "a.txt": "alpha\nbeta\nalpha\nalpha beta alpha\n" });
    const error = await session.fail(
      editFile,
      { path: "a.txt", old_text: "alpha", new_text: "x" },
      "AMBIGUOUS_MATCH",
    );
    expect(error.message).toContain("4 times");
    expect(error.message).toContain("lines 1, 3, 4, 4");
    expect(error.data).toMatchObject({ count: 4, lines: [1, 3, 4, 4] });
    expect(text(await bytesOf())).toBe("alpha\nbeta\nalpha\nalpha beta alpha\n");
  });

  it("treats overlapping occurrences as ambiguous", async () => {
    const session = await openAndRead({ "a.txt": "aaa" });
    const error = await session.fail(
      editFile,
      { path: "a.txt", old_text: "aa", new_text: "b" },
      "AMBIGUOUS_MATCH",
    );
    expect(error.data).toMatchObject({ count: 2 });
    expect(text(await bytesOf())).toBe("aaa");
    const out = await session.run(editFile, {
      path: "a.txt",
      old_text: "aa",
      new_text: "b",
      replace_all: true,
    });
    expect(out.data).toMatchObject({ replacements: 1 });
    expect(text(await bytesOf())).toBe("ba");
  });

  it("replaces every occurrence with replace_all", async () => {
    const session = await openAndRead({ "a.txt": "a-a-a" });
    const out = await session.run(editFile, {
      path: "a.txt",
      old_text: "a",
      new_text: "bb",
      replace_all: true,
    });
    expect(text(await bytesOf())).toBe("bb-bb-bb");
    expect(out.data).toMatchObject({ replacements: 3, bytes: 8 });
  });

  it("replaces literally: $& and $1 are not expanded", async () => {
    const session = await openAndRead({ "a.txt": "price: X\n" });
    await session.run(editFile, { path: "a.txt", old_text: "X", new_text: "$& $1 $$ $'" });
    expect(text(await bytesOf())).toBe("price: $& $1 $$ $'\n");
  });

  it("keeps a BOM, CRLF and a missing final newline byte for byte", async () => {
    const original = Buffer.from("\uFEFFone\r\ntwo\r\nthree", "utf8");
    const session = await openAndRead({ "a.txt": original });
    await session.run(editFile, { path: "a.txt", old_text: "two", new_text: "TWO" });
    expect(Buffer.from((await bytesOf()) as Uint8Array)).toEqual(
      Buffer.from("\uFEFFone\r\nTWO\r\nthree", "utf8"),
    );
  });

  it("fails with TEXT_NOT_FOUND and changes nothing; a repeated edit finds nothing", async () => {
    const session = await openAndRead({ "a.txt": "alpha\n" });
    await session.run(editFile, { path: "a.txt", old_text: "alpha", new_text: "gamma" });
    const error = await session.fail(
      editFile,
      { path: "a.txt", old_text: "alpha", new_text: "gamma" },
      "TEXT_NOT_FOUND",
    );
    expect(error.hint).toBeUndefined();
    expect(text(await bytesOf())).toBe("gamma\n");
  });

  it("hints when only tabs versus spaces differ, naming the line", async () => {
    const session = await openAndRead({ "a.txt": "function f() {\n\treturn 1;\n}\n" });
    const error = await session.fail(
      editFile,
      { path: "a.txt", old_text: "    return 1;", new_text: "    return 2;" },
      "TEXT_NOT_FOUND",
    );
    expect(error.message).toContain("line 2");
    expect(error.message).toContain("tabs");
    expect(error.data).toMatchObject({ near_line: 2 });
    expect(text(await bytesOf())).toBe("function f() {\n\treturn 1;\n}\n");
  });

  it("hints at trailing whitespace on the line where it is", async () => {
    const session = await openAndRead({ "a.txt": "first\nx = 1;   \ny = 2;\n" });
    const error = await session.fail(
      editFile,
      { path: "a.txt", old_text: "x = 1;\ny = 2;", new_text: "z" },
      "TEXT_NOT_FOUND",
    );
    expect(error.message).toContain("lines 2-3");
    expect(error.message).toContain("trailing whitespace on line 2");
  });

  it("hints when the file uses CRLF and old_text uses LF", async () => {
    const session = await openAndRead({ "a.txt": "head\r\nalpha\r\nbeta\r\n" });
    const error = await session.fail(
      editFile,
      { path: "a.txt", old_text: "alpha\nbeta", new_text: "x" },
      "TEXT_NOT_FOUND",
    );
    expect(error.message).toContain("lines 2-3");
    expect(error.message).toContain("CRLF");
    expect(text(await bytesOf())).toBe("head\r\nalpha\r\nbeta\r\n");
  });

  it("refuses new_text equal to old_text with NO_CHANGE", async () => {
    const session = await openAndRead({ "a.txt": "same\n" });
    await session.fail(editFile, { path: "a.txt", old_text: "same", new_text: "same" }, "NO_CHANGE");
    expect(text(await bytesOf())).toBe("same\n");
  });

  it("binds to the observed version", async () => {
    fixture = await factory({ "a.txt": "alpha\n" });
    const session = new Session(fixture.fs);
    await session.fail(editFile, { path: "a.txt", old_text: "alpha", new_text: "x" }, "NOT_READ");
    await session.run(readFile, { path: "a.txt" });
    await fixture.fs.writeFileAtomic("a.txt", utf8("alpha changed\n"));
    await session.fail(editFile, { path: "a.txt", old_text: "alpha", new_text: "x" }, "STALE_VERSION");
    expect(text(await bytesOf())).toBe("alpha changed\n");
    await session.run(readFile, { path: "a.txt" });
    await session.fail(
      editFile,
      {
        path: "a.txt",
        old_text: "alpha",
        new_text: "x",
        expected_version: sha256Hex(Buffer.from("alpha\n")),
      },
      "STALE_VERSION",
    );
    await session.run(editFile, { path: "a.txt", old_text: "changed", new_text: "edited" });
    expect(text(await bytesOf())).toBe("alpha edited\n");
  });

  it("re-checks the version at commit time", async () => {
    fixture = await factory({ "a.txt": "alpha\n" });
    // A file system whose file changes between the tool's check and its commit.
    const inner = fixture.fs;
    let races = 0;
    const racing: WorkspaceFs = {
      label: inner.label,
      protectedPaths: inner.protectedPaths,
      resolve: (path) => inner.resolve(path),
      stat: (path) => inner.stat(path),
      readFile: (path) => inner.readFile(path),
      readChunks: (path, options) => inner.readChunks(path, options),
      readDir: (path) => inner.readDir(path),
      glob: (pattern, options) => inner.glob(pattern, options),
      writeFileAtomic: async (path, data, options) => {
        await inner.writeFileAtomic(path, utf8(`raced in ${++races}\n`));
        return inner.writeFileAtomic(path, data, options);
      },
    };
    const session = new Session(racing);
    await session.run(readFile, { path: "a.txt" });
    await session.fail(editFile, { path: "a.txt", old_text: "alpha", new_text: "x" }, "STALE_VERSION");
    expect(text(await bytesOf())).toBe("raced in 1\n");
    await session.run(readFile, { path: "a.txt" });
    await session.fail(writeFile, { path: "a.txt", content: "x" }, "STALE_VERSION");
    expect(text(await bytesOf())).toBe("raced in 2\n");
  });

  it("reports missing files, directories and non-UTF-8 content", async () => {
    const session = await openAndRead({ "dir/x.txt": "x", "bin.dat": new Uint8Array([0xff, 0x61]) });
    await session.fail(editFile, { path: "missing.txt", old_text: "a", new_text: "b" }, "NOT_FOUND");
    await session.fail(editFile, { path: "dir", old_text: "a", new_text: "b" }, "IS_DIRECTORY");
    session.observed.set("bin.dat", sha256Hex(new Uint8Array([0xff, 0x61])));
    await session.fail(editFile, { path: "bin.dat", old_text: "a", new_text: "b" }, "INVALID_UTF8");
    expect((await fixture.files())["bin.dat"]).toEqual(new Uint8Array([0xff, 0x61]));
  });
});
