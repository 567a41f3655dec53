import { describe, expect, it } from "vitest";
import { requiredLiteral, wholeLiteral } from "../../src/tools/files/search/literal.js";

describe("what a pattern says about the text it matches", () => {
  it("knows a pattern that is one literal, escaped punctuation included", () => {
    expect(wholeLiteral("TODO")).toBe("TODO");
    expect(wholeLiteral("a\\.b\\(c\\)")).toBe("a.b(c)");
    expect(wholeLiteral("process.nextTick")).toBeUndefined();
    expect(wholeLiteral("ab?")).toBeUndefined();
    expect(wholeLiteral("a|b")).toBeUndefined();
    expect(wholeLiteral("^a")).toBeUndefined();
    // A byte search could not stand for these.
    expect(wholeLiteral("a\uFFFDb")).toBeUndefined();
    expect(wholeLiteral("\uD83D")).toBeUndefined();
  });

  it("finds the longest literal every match contains, and nothing when unsure", () => {
    expect(requiredLiteral("function\\s+main\\(", false)).toBe("function");
    expect(requiredLiteral("Symbol\\.for\\([\"']\\w+", false)).toBe("Symbol.for(");
    expect(requiredLiteral("colou?r", false)).toBe("colo");
    expect(requiredLiteral("ab+c", false)).toBe("ab");
    expect(requiredLiteral("x{2,3}yz", false)).toBe("yz");
    expect(requiredLiteral("(foo|bar)bazz", false)).toBe("bazz");
    expect(requiredLiteral("foo|bar", false)).toBeUndefined();
    expect(requiredLiteral("\\x41BC", false)).toBeUndefined();
    expect(requiredLiteral("a{", false)).toBeUndefined();
    expect(requiredLiteral("\\w+", false)).toBeUndefined();
    expect(requiredLiteral("(a+)+$", false)).toBeUndefined();
    expect(requiredLiteral("x(a+)+$", false)).toBe("x");
    expect(requiredLiteral("a\\1bc", false)).toBe("bc");
  });

  it("with ignore_case, takes only ASCII literals", () => {
    expect(requiredLiteral("Straße.*needle", true)).toBe("needle");
    expect(requiredLiteral("Straße", true)).toBeUndefined();
    expect(requiredLiteral("Straße", false)).toBe("Straße");
  });

  it("never claims a literal a match could lack", () => {
    const patterns = ["ab?c", "a*b", "(x)?yz", "q{0,2}rs", "a.b", "a\\sb", "[ab]cd", "(?:ab)?cd", "ab+?c"];
    const samples = [
      "ac",
      "abc",
      "b",
      "yz",
      "xyz",
      "rs",
      "qqrs",
      "axb",
      "a b",
      "acd",
      "bcd",
      "cd",
      "abcd",
      "abbc",
    ];
    for (const pattern of patterns) {
      const literal = requiredLiteral(pattern, false);
      const regex = new RegExp(pattern);
      for (const sample of samples) {
        if (regex.test(sample) && literal !== undefined) expect(sample, pattern).toContain(literal);
      }
    }
  });
});
