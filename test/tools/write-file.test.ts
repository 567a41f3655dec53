import { afterEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { createReadFileTool } from "../../src/tools/files/read-file.js";
import { createWriteFileTool } from "../../src/tools/files/write-file.js";
import { FACTORIES, type FsFixture, text, utf8 } from "../workspace/fixtures.js";
import { Session } from "./helpers.js";

const readFile = createReadFileTool();
const writeFile = createWriteFileTool();

describe.each(FACTORIES)("write_file on %s", (_name, factory) => {
  let fixture: FsFixture;
  const open = async (files: Record<string, string | Uint8Array> = {}): Promise<Session> => {
    fixture = await factory(files);
    return new Session(fixture.fs);
  };
  afterEach(async () => {
    await fixture.dispose();
  });

  it("creates a file with parents and reports the real UTF-8 byte count", async () => {
    const session = await open({ "keep.txt": "k" });
    const out = await session.run(writeFile, { path: "demo/deep/note.txt", content: "你好" });
    const version = sha256Hex(Buffer.from("你好"));
    expect(out.data).toEqual({
      path: "demo/deep/note.txt",
      version,
      bytes: 6,
      created: true,
      diff: "--- /dev/null\n+++ b/demo/deep/note.txt\n@@ -0,0 +1 @@\n+你好\n\\ No newline at end of file\n",
    });
    expect(out.content).toContain("6 UTF-8 bytes");
    expect(out.content).toContain(`version: ${version}`);
    // Exactly the two files: nothing else (no temp files) was left behind.
    expect(await fixture.files()).toEqual({ "keep.txt": utf8("k"), "demo/deep/note.txt": utf8("你好") });
  });

  it("writes ASCII as one byte per character and an empty string as an empty file", async () => {
    const session = await open();
    expect((await session.run(writeFile, { path: "note.txt", content: "alpha" })).data?.bytes).toBe(5);
    expect((await session.run(writeFile, { path: "empty.txt", content: "" })).data?.bytes).toBe(0);
    expect(await fixture.files()).toEqual({ "note.txt": utf8("alpha"), "empty.txt": new Uint8Array() });
  });

  it("refuses to replace a file this session never read, leaving its bytes", async () => {
    const session = await open({ "a.txt": "original" });
    const error = await session.fail(writeFile, { path: "a.txt", content: "clobber" }, "NOT_READ");
    expect(error.message).toContain("a.txt");
    expect(text((await fixture.files())["a.txt"])).toBe("original");
  });

  it("replaces a file after reading it, keeping its mode", async () => {
    const session = await open({ "a.txt": "original" });
    await fixture.setMode("a.txt", 0o640);
    await session.run(readFile, { path: "a.txt" });
    const out = await session.run(writeFile, { path: "a.txt", content: "new" });
    expect(out.data).toMatchObject({ created: false, bytes: 3, version: sha256Hex(Buffer.from("new")) });
    expect(text((await fixture.files())["a.txt"])).toBe("new");
    expect((await fixture.fs.stat("a.txt"))?.mode).toBe(0o640);
    // The write itself is an observation: a second write needs no new read.
    await session.run(writeFile, { path: "a.txt", content: "newer" });
    expect(text((await fixture.files())["a.txt"])).toBe("newer");
  });

  it("refuses a write when the file changed since it was read", async () => {
    const session = await open({ "a.txt": "original" });
    await session.run(readFile, { path: "a.txt" });
    await fixture.fs.writeFileAtomic("a.txt", utf8("someone else"));
    const error = await session.fail(writeFile, { path: "a.txt", content: "mine" }, "STALE_VERSION");
    expect(error.data).toMatchObject({ current_version: sha256Hex(Buffer.from("someone else")) });
    expect(text((await fixture.files())["a.txt"])).toBe("someone else");
  });

  it("checks expected_version against the current bytes", async () => {
    const session = await open({ "a.txt": "original" });
    await session.run(readFile, { path: "a.txt" });
    await session.fail(
      writeFile,
      { path: "a.txt", content: "x", expected_version: "0".repeat(64) },
      "STALE_VERSION",
    );
    expect(text((await fixture.files())["a.txt"])).toBe("original");
    await session.run(writeFile, {
      path: "a.txt",
      content: "x",
      expected_version: sha256Hex(Buffer.from("original")),
    });
    expect(text((await fixture.files())["a.txt"])).toBe("x");
  });

  it("refuses expected_version for a file that does not exist, creating nothing", async () => {
    const session = await open();
    await session.fail(
      writeFile,
      { path: "ghost.txt", content: "x", expected_version: "a".repeat(64) },
      "STALE_VERSION",
    );
    expect(await fixture.files()).toEqual({});
  });

  it("refuses directories, escapes and unpaired surrogates without writing", async () => {
    const session = await open({ "dir/a.txt": "a" });
    await session.fail(writeFile, { path: "dir", content: "x" }, "IS_DIRECTORY");
    await session.fail(writeFile, { path: "../x.txt", content: "x" }, "PATH_ESCAPE");
    await session.fail(writeFile, { path: ".harness/x", content: "x" }, "RESERVED_PATH");
    await session.fail(writeFile, { path: "NUL.txt", content: "x" }, "INVALID_PATH");
    await session.fail(writeFile, { path: "dir/a.txt/b", content: "x" }, "INVALID_PATH");
    await session.fail(writeFile, { path: "s.txt", content: "bad \ud800" }, "SEMANTIC_VALIDATION_ERROR");
    expect(await fixture.files()).toEqual({ "dir/a.txt": utf8("a") });
  });
});
