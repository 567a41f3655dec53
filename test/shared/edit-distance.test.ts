import { describe, expect, it } from "vitest";
import { closestName } from "../../src/runtime/suggest.js";
import { editDistance } from "../../src/shared/edit-distance.js";
import { closest } from "../../src/shared/suggest.js";

describe("editDistance", () => {
  it("counts insertions, deletions and substitutions", () => {
    expect(editDistance("", "")).toBe(0);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("abc", "")).toBe(3);
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("run", "run")).toBe(0);
  });

  it("counts a swap of two neighbours as one edit, never editing one substring twice", () => {
    expect(editDistance("ab", "ba")).toBe(1);
    expect(editDistance("wiat", "wait")).toBe(1);
    // Optimal string alignment: "ca" -> "ac" -> "abc" would edit the swapped pair again.
    expect(editDistance("ca", "abc")).toBe(3);
  });

  it("is what both suggestions measure: a swap of neighbours is one edit", () => {
    // "wiat" is two deletions from "wa" and one swap from "wait": counted as one edit, the swap wins.
    expect(closest("wiat", ["wa", "wait"])).toBe("wait");
    expect(closestName("wiat", ["wa", "wait"])).toBe("wait");
  });
});
