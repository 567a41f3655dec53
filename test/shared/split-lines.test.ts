import { describe, expect, it } from "vitest";
import { splitLines } from "../../src/shared/split-lines.js";

describe("splitLines", () => {
  it("splits on LF; a final LF ends the last line, and an empty text has no lines", () => {
    expect(splitLines("")).toEqual([]);
    expect(splitLines("\n")).toEqual([""]);
    expect(splitLines("a")).toEqual(["a"]);
    expect(splitLines("a\n")).toEqual(["a"]);
    expect(splitLines("a\nb")).toEqual(["a", "b"]);
    expect(splitLines("a\n\n")).toEqual(["a", ""]);
    expect(splitLines("a\r\nb\r\n")).toEqual(["a\r", "b\r"]);
  });
});
