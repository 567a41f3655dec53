import { afterEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { createReadFileTool, READ_MAX_BYTES } from "../../src/tools/files/read-file.js";
import { FACTORIES, type FsFixture } from "../workspace/fixtures.js";
import { Session } from "./helpers.js";

const readFile = createReadFileTool();

describe.each(FACTORIES)("read_file on %s", (_name, factory) => {
  let fixture: FsFixture | undefined;
  const open = async (files: Record<string, string | Uint8Array>): Promise<Session> => {
    fixture = await factory(files);
    return new Session(fixture.fs);
  };
  afterEach(async () => {
    await fixture?.dispose();
    fixture = undefined;
  });

  it("returns numbered lines, the version of the whole file and the canonical path", async () => {
    const session = await open({ "src/a.txt": "one\ntwo\nthree\n" });
    const out = await session.run(readFile, { path: "./src//a.txt" });
    const version = sha256Hex(Buffer.from("one\ntwo\nthree\n"));
    expect(out.content.split("\n")).toEqual([
      "path: src/a.txt",
      `version: ${version}`,
      "lines 1-3 of 3",
      "   1\tone",
      "   2\ttwo",
      "   3\tthree",
    ]);
    expect(out.data).toEqual({
      path: "src/a.txt",
      version,
      total_lines: 3,
      start_line: 1,
      end_line: 3,
      truncated: false,
    });
  });

  it("reads a range and says how to continue", async () => {
    const session = await open({ "a.txt": "one\ntwo\nthree\nfour" });
    const out = await session.run(readFile, { path: "a.txt", offset: 2, limit: 2 });
    expect(out.content).toContain("lines 2-3 of 4");
    expect(out.content).toContain("   2\ttwo\n   3\tthree");
    expect(out.content).not.toContain("four");
    expect(out.content).toContain("continue with offset=4");
    expect(out.data).toMatchObject({ start_line: 2, end_line: 3, truncated: true, next_offset: 4 });
    const last = await session.run(readFile, { path: "a.txt", offset: 4 });
    expect(last.data).toMatchObject({ start_line: 4, end_line: 4, truncated: false });
    expect(last.data).not.toHaveProperty("next_offset");
  });

  it("caps a call at 2000 lines by default", async () => {
    const lines = Array.from({ length: 2500 }, (_, i) => `line ${i + 1}`);
    const session = await open({ "big.txt": `${lines.join("\n")}\n` });
    const out = await session.run(readFile, { path: "big.txt" });
    expect(out.data).toMatchObject({ total_lines: 2500, end_line: 2000, truncated: true, next_offset: 2001 });
    expect(out.content).toContain("2000\tline 2000");
    expect(out.content).not.toContain("line 2001");
  });

  it("pages a large file by bytes: any range of a 200k-line file, exact line text, the whole file's version", async () => {
    const lines = Array.from({ length: 200_000 }, (_, i) => `ligne ${i + 1} é😀${i % 7 === 0 ? "\r" : ""}`);
    const text = `${lines.join("\n")}\n`;
    const session = await open({ "big.txt": text });
    const middle = await session.run(readFile, { path: "big.txt", offset: 123_456, limit: 3 });
    expect(middle.content.split("\n")).toEqual([
      "path: big.txt",
      `version: ${sha256Hex(Buffer.from(text))}`,
      "lines 123456-123458 of 200000 (CRLF line endings)",
      "truncated: 76542 more lines; continue with offset=123459",
      "123456\tligne 123456 é😀",
      "123457\tligne 123457 é😀",
      "123458\tligne 123458 é😀",
    ]);
    const end = await session.run(readFile, { path: "big.txt", offset: 200_000 });
    expect(end.content.split("\n").at(-1)).toBe("200000\tligne 200000 é😀");
    expect(end.data).toMatchObject({ total_lines: 200_000, end_line: 200_000, truncated: false });
  });

  it("cuts one huge line at the budget without splitting a character, and refuses invalid UTF-8 anywhere", async () => {
    const huge = "é".repeat(3_000_000);
    const session = await open({
      "one.txt": `${huge}\nnext\n`,
      "bad.txt": Buffer.concat([Buffer.from("a\n".repeat(100_000)), Buffer.from([0xff]), Buffer.from("\n")]),
    });
    const out = await session.run(readFile, { path: "one.txt" });
    const [shown] = out.content.split("\n").slice(4);
    expect(shown).toMatch(/^ {3}1\té+ … \[line cut: too long to show\]$/);
    expect(Buffer.byteLength(shown ?? "")).toBeLessThanOrEqual(READ_MAX_BYTES);
    expect(out.data).toMatchObject({ total_lines: 2, end_line: 1, truncated: true, next_offset: 2 });
    await expect(session.run(readFile, { path: "bad.txt" })).rejects.toMatchObject({
      code: "INVALID_UTF8",
      data: { offset: 200_000 },
    });
  });

  it("caps a call at 32 KiB of text and continues from the next line", async () => {
    const lines = Array.from(
      { length: 100 },
      (_, i) => `${String(i + 1).padStart(3, "0")}${"x".repeat(997)}`,
    );
    const session = await open({ "wide.txt": lines.join("\n") });
    const out = await session.run(readFile, { path: "wide.txt" });
    const end = out.data?.end_line as number;
    expect(end).toBeGreaterThan(1);
    expect(end).toBeLessThan(100);
    const body = out.content.split("\n").filter((line) => /^\s*\d+\t/.test(line));
    expect(Buffer.byteLength(body.join("\n"))).toBeLessThanOrEqual(READ_MAX_BYTES);
    expect(out.data).toMatchObject({ truncated: true, next_offset: end + 1 });
    const next = await session.run(readFile, { path: "wide.txt", offset: end + 1 });
    expect(next.content).toContain(`${String(end + 1).padStart(3, "0")}xxx`);
  });

  it("cuts a single line longer than the byte cap and says so", async () => {
    const session = await open({ "min.js": `${"y".repeat(100_000)}\nsecond\n` });
    const out = await session.run(readFile, { path: "min.js" });
    expect(Buffer.byteLength(out.content)).toBeLessThan(READ_MAX_BYTES + 1024);
    expect(out.content).toContain("[line cut");
    expect(out.data).toMatchObject({ start_line: 1, end_line: 1, truncated: true, next_offset: 2 });
  });

  it("handles an empty file as 0 lines", async () => {
    const session = await open({ "empty.txt": "" });
    const out = await session.run(readFile, { path: "empty.txt" });
    expect(out.content).toContain("0 lines");
    expect(out.content).toContain(`version: ${sha256Hex(new Uint8Array())}`);
    expect(out.data).toMatchObject({ total_lines: 0, start_line: 1, end_line: 0, truncated: false });
    await session.fail(readFile, { path: "empty.txt", offset: 2 }, "SEMANTIC_VALIDATION_ERROR");
  });

  it("refuses an offset past the last line", async () => {
    const session = await open({ "a.txt": "one\ntwo\n" });
    const error = await session.fail(readFile, { path: "a.txt", offset: 3 }, "SEMANTIC_VALIDATION_ERROR");
    expect(error.message).toContain("2 lines");
  });

  it("refuses invalid UTF-8 instead of showing replacement characters", async () => {
    const session = await open({ "bin.dat": new Uint8Array([0x61, 0x62, 0xff, 0x63, 0x0a]) });
    const error = await session.fail(readFile, { path: "bin.dat" }, "INVALID_UTF8");
    expect(error.message).not.toContain("\uFFFD");
    expect(error.message).toContain("offset 2");
    expect(error.data).toMatchObject({ offset: 2 });
    expect(session.observed.size).toBe(0);
  });

  it("refuses overlong and surrogate encodings too", async () => {
    const session = await open({
      "overlong.txt": new Uint8Array([0xc0, 0xaf]),
      "surrogate.txt": new Uint8Array([0xed, 0xa0, 0x80]),
      "cut.txt": new Uint8Array([0x61, 0xe2, 0x82]),
    });
    for (const path of ["overlong.txt", "surrogate.txt", "cut.txt"]) {
      await session.fail(readFile, { path }, "INVALID_UTF8");
    }
  });

  it("keeps a BOM as content and shows CRLF lines without the CR", async () => {
    const session = await open({ "win.txt": "\uFEFFfirst\r\nsecond\r\n" });
    const out = await session.run(readFile, { path: "win.txt" });
    expect(out.content).toContain("   1\t\uFEFFfirst\n   2\tsecond");
    expect(out.content).not.toContain("\r");
    expect(out.content).toContain("CRLF");
    expect(out.data?.version).toBe(sha256Hex(Buffer.from("\uFEFFfirst\r\nsecond\r\n")));
  });

  it("maps workspace failures to tool error codes", async () => {
    const session = await open({ "src/a.txt": "x", ".harness/j": "{}" });
    await session.fail(readFile, { path: "src" }, "IS_DIRECTORY");
    await session.fail(readFile, { path: "missing.txt" }, "NOT_FOUND");
    await session.fail(readFile, { path: "../secret.txt" }, "PATH_ESCAPE");
    await session.fail(readFile, { path: "/etc/passwd" }, "PATH_ESCAPE");
    await session.fail(readFile, { path: ".harness/j" }, "RESERVED_PATH");
    await session.fail(readFile, { path: "nested/CON.log" }, "INVALID_PATH");
    await session.fail(readFile, { path: "src/a.txt/x" }, "INVALID_PATH");
  });
});
