import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { splitKeepingEnds, unifiedDiff } from "../../src/proposals/diff.js";

/** Apply a unified diff produced by unifiedDiff to `before` (strict: context must match). */
function patch(before: string, diff: string): string {
  if (diff === "") return before;
  const old = splitKeepingEnds(before);
  const lines = diff.replace(/\n$/, "").split("\n");
  const out: string[] = [];
  let cursor = 0;
  let i = 2;
  while (i < lines.length) {
    const header = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@$/.exec(lines[i]!);
    if (!header) throw new Error(`bad hunk header ${lines[i]}`);
    const oldStart = Number(header[1]);
    const oldCount = header[2] === undefined ? 1 : Number(header[2]);
    const from = oldCount === 0 ? oldStart : oldStart - 1;
    while (cursor < from) out.push(old[cursor++]!);
    i++;
    while (i < lines.length && !lines[i]!.startsWith("@@")) {
      const line = lines[i]!;
      const noEol = lines[i + 1] === "\\ No newline at end of file";
      const body = line.slice(1) + (noEol ? "" : "\n");
      if (line[0] === " " || line[0] === "-") {
        if (old[cursor] !== body) throw new Error(`context mismatch at old line ${cursor + 1}`);
        cursor++;
      }
      if (line[0] === " " || line[0] === "+") out.push(body);
      i += noEol ? 2 : 1;
    }
  }
  while (cursor < old.length) out.push(old[cursor++]!);
  return out.join("");
}

describe("unifiedDiff", () => {
  it("shows a one-line change with its context, git style", () => {
    const before = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n";
    const after = before.replace("five", "FIVE");
    expect(unifiedDiff("a.txt", before, after)).toBe(
      [
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -2,7 +2,7 @@",
        " two",
        " three",
        " four",
        "-five",
        "+FIVE",
        " six",
        " seven",
        " eight",
        "",
      ].join("\n"),
    );
  });

  it("diffs a new file against /dev/null", () => {
    expect(unifiedDiff("src/new.ts", null, "a\nb\n")).toBe(
      "--- /dev/null\n+++ b/src/new.ts\n@@ -0,0 +1,2 @@\n+a\n+b\n",
    );
  });

  it("marks a missing final newline", () => {
    expect(unifiedDiff("f", "x\n", "x")).toBe(
      "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+x\n\\ No newline at end of file\n",
    );
  });

  it("is empty when nothing changes", () => {
    expect(unifiedDiff("f", "same\n", "same\n")).toBe("");
  });

  it("splits distant changes into separate hunks", () => {
    const lines = Array.from({ length: 30 }, (_, n) => `line ${n + 1}\n`);
    const after = [...lines];
    after[1] = "changed 2\n";
    after[25] = "changed 26\n";
    const diff = unifiedDiff("f", lines.join(""), after.join(""));
    expect(diff.match(/^@@/gm)).toHaveLength(2);
    expect(diff).toContain("@@ -1,5 +1,5 @@");
    expect(diff).toContain("@@ -23,7 +23,7 @@");
  });

  it("round-trips: applying the diff to the old text gives the new text", () => {
    const line = fc.constantFrom("a", "b", "c", "", "d d", "\r");
    const text = fc
      .tuple(fc.array(line, { maxLength: 25 }), fc.boolean())
      .map(([lines, finalNewline]) =>
        lines.length === 0 ? "" : lines.join("\n") + (finalNewline ? "\n" : ""),
      );
    fc.assert(
      fc.property(text, text, (before, after) => {
        expect(patch(before, unifiedDiff("f", before, after))).toBe(after);
      }),
      { numRuns: 500 },
    );
  });

  it("stays correct on large rewrites beyond the edit-distance bound", () => {
    const before = Array.from({ length: 3000 }, (_, n) => `old ${n}\n`).join("");
    const after = Array.from({ length: 3000 }, (_, n) => `new ${n}\n`).join("");
    expect(patch(before, unifiedDiff("f", before, after))).toBe(after);
  });
});
