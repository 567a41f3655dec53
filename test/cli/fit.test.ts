import { describe, expect, it } from "vitest";
import { fitLine, fitText, outputWidth } from "../../src/cli/fit.js";

const stream = (isTTY: boolean, columns?: number) => ({ isTTY, columns }) as unknown as NodeJS.WriteStream;

describe("fitting human output to the terminal", () => {
  it("takes the terminal's columns, else COLUMNS, else no limit", () => {
    expect(outputWidth(stream(true, 100), { COLUMNS: "60" })).toBe(100);
    expect(outputWidth(stream(false), { COLUMNS: "60" })).toBe(60);
    expect(outputWidth(stream(false), { COLUMNS: "wide" })).toBeUndefined();
    expect(outputWidth(stream(false), { COLUMNS: "0" })).toBeUndefined();
    expect(outputWidth(stream(false), {})).toBeUndefined();
  });

  it("cuts a long line to the width, the last character an ellipsis", () => {
    expect(fitLine("abcdefghij", 5)).toBe("abcd…");
    expect(fitLine("abcde", 5)).toBe("abcde");
    expect(fitLine("abcdefghij", undefined)).toBe("abcdefghij");
    // Columns, not UTF-16 units: an emoji takes two, and is never split.
    expect(fitLine("😀😀😀😀😀😀", 4)).toBe("😀…");
    expect(fitLine("😀😀😀😀😀😀", 5)).toBe("😀😀…");
  });

  it("does not count colour codes, keeps them, and resets colour after a cut", () => {
    const red = (text: string) => `\u001b[31m${text}\u001b[39m`;
    expect(fitLine(red("abcde"), 5)).toBe(red("abcde"));
    expect(fitLine(red("abcdefgh"), 5)).toBe("\u001b[31mabcd…\u001b[0m");
  });

  it("fits each line of a text on its own, keeping the line count", () => {
    expect(fitText("short\na much longer line\n", 8)).toBe("short\na much …\n");
  });
});
