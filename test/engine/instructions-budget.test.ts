import { describe, expect, it } from "vitest";
import {
  instructionFile,
  instructionsText,
  nestedOrder,
  PINNED_INSTRUCTIONS_BUDGET_BYTES,
  pinnedBytes,
  withinBudget,
} from "../../src/engine/instructions.js";

const file = (path: string, bytes: number) =>
  instructionFile("nested", path, new TextEncoder().encode(`${path}:`.padEnd(bytes, "x")));

describe("the pinned-instructions budget", () => {
  it("sends files whole while they fit, then lists the rest by path and digest; what is pinned already counts", () => {
    const third = Math.floor(PINNED_INSTRUCTIONS_BUDGET_BYTES / 3) - 100;
    const files = ["a/AGENTS.md", "b/AGENTS.md", "c/AGENTS.md"].map((path) => file(path, third));
    const first = withinBudget(files, 0);
    expect(first.map((f) => f.listed === true)).toEqual([false, false, false]);
    // A later load after those three: nothing is left for another big file, a small one still fits.
    const later = withinBudget([file("d/AGENTS.md", third), file("e/AGENTS.md", 10)], pinnedBytes(first));
    expect(later.map((f) => f.listed === true)).toEqual([true, false]);
    const [listed] = later;
    expect(listed?.sha256).toBe(file("d/AGENTS.md", third).sha256);
    expect(instructionsText(listed!)).toBe(listed?.text);
    expect(listed?.text).toContain(`d/AGENTS.md (instructions for files under d/) is not included`);
    expect(listed?.text).toContain(`sha256 ${listed?.sha256}`);
    expect(listed?.text).not.toContain("xxxx");
    expect(pinnedBytes([...first, ...later])).toBeLessThanOrEqual(PINNED_INSTRUCTIONS_BUDGET_BYTES);
  });

  it("decides in one order whatever order the calls touched the directories in", () => {
    const big = Math.floor(PINNED_INSTRUCTIONS_BUDGET_BYTES * 0.4);
    const files = [file("z/AGENTS.md", big), file("a/b/AGENTS.md", big), file("m/AGENTS.md", big)];
    const one = withinBudget(nestedOrder(files), 0);
    const other = withinBudget(nestedOrder([...files].reverse()), 0);
    expect(one).toEqual(other);
    expect(one.map((f) => [f.path, f.listed === true])).toEqual([
      ["m/AGENTS.md", false],
      ["z/AGENTS.md", false],
      ["a/b/AGENTS.md", true],
    ]);
  });
});
