import { posix } from "node:path";
import { describe, expect, it } from "vitest";
import { commandPatternMatches, normalizeSubjectPath } from "../../src/policy/rules.js";

/** The normalization as written before its fast path for paths already normal. */
function reference(raw: string): string {
  const slashed = raw.replaceAll("\\", "/");
  if (slashed === "") return ".";
  let normalized = posix.normalize(slashed);
  if (normalized.length > 1 && normalized.endsWith("/")) normalized = normalized.slice(0, -1);
  if (normalized.startsWith("./")) normalized = normalized.slice(2);
  return normalized === "" ? "." : normalized;
}

describe("normalizeSubjectPath", () => {
  it("gives what the full normalization gives for every path of up to six characters from a/./\\", () => {
    const alphabet = ["a", ".", "/", "\\"];
    let checked = 0;
    const visit = (prefix: string): void => {
      expect(normalizeSubjectPath(prefix), JSON.stringify(prefix)).toBe(reference(prefix));
      checked++;
      if (prefix.length < 6) for (const c of alphabet) visit(prefix + c);
    };
    visit("");
    expect(checked).toBe(5461);
  });

  it("leaves a plain path as it is and still normalizes the others", () => {
    expect(normalizeSubjectPath("src/a.ts")).toBe("src/a.ts");
    expect(normalizeSubjectPath(".env")).toBe(".env");
    expect(normalizeSubjectPath("a/..b/c..")).toBe("a/..b/c..");
    expect(normalizeSubjectPath("./.env")).toBe(".env");
    expect(normalizeSubjectPath("a//b/")).toBe("a/b");
    expect(normalizeSubjectPath("a/../.env")).toBe(".env");
    expect(normalizeSubjectPath("a\\..\\.env")).toBe(".env");
    expect(normalizeSubjectPath("")).toBe(".");
  });
});

describe("commandPatternMatches with its parts cached", () => {
  it("answers the same for a pattern asked again", () => {
    for (let i = 0; i < 2; i++) {
      expect(commandPatternMatches("git *", "git status")).toBe(true);
      expect(commandPatternMatches("git *", "gitk")).toBe(false);
      expect(commandPatternMatches("*rm*-rf*", "sudo rm -rf /")).toBe(true);
      expect(commandPatternMatches("ls", "ls")).toBe(true);
    }
  });
});
