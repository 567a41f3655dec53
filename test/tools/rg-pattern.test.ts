import { describe, expect, it } from "vitest";
import { ripgrepPattern } from "../../src/tools/files/search/rg-pattern.js";

describe("a JavaScript expression rewritten for rg", () => {
  it("keeps what means the same and widens what JavaScript matches more of", () => {
    expect(ripgrepPattern("function main")).toBe("function main");
    expect(ripgrepPattern("\\w+\\(\\d{2,3}\\)")).toBe("\\w+\\(\\d{2,3}\\)");
    expect(ripgrepPattern("a.b")).toBe("a(?:(?:.)?)b");
    expect(ripgrepPattern("\\s")).toBe("[\\s\\x{FEFF}]");
    expect(ripgrepPattern("x$")).toBe("x(?:\\r?$)");
    expect(ripgrepPattern("[^a-z]")).toBe("(?:(?:[^a-z])?)");
    expect(ripgrepPattern("[a-z&~-]")).toBe("[a-z\\&\\~\\-]");
    expect(ripgrepPattern("a{,2}}]#")).toBe("a\\{,2\\}\\}\\]\\#");
    expect(ripgrepPattern("a\\/b(?:c|d)*?")).toBe("a/b(?:c|d)*?");
  });

  it("gives up where rg's dialect is narrower or lacks the construct", () => {
    for (const pattern of [
      "\\bfoo",
      "\\Bfoo",
      "\\W",
      "\\D",
      "[^\\d]",
      "[^\\w]",
      "[^\\S]",
      "(?=x)",
      "(?<!x)y",
      "(?<name>x)",
      "(a)\\1",
      "\\x41",
      "\\u0041",
      "\\cA",
      "\\0",
      "\\n",
      "[]",
      "[^]",
      "\u{1F600}",
      "[\\b]",
    ]) {
      expect(ripgrepPattern(pattern), pattern).toBeUndefined();
    }
  });
});
