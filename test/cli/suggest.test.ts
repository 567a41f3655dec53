import { describe, expect, it } from "vitest";
import { closeMatches, closest } from "../../src/shared/suggest.js";

describe("closeMatches", () => {
  const models = ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "o3", "claude-sonnet-4"];

  it("names the ids within a typo's reach, closest first, and those containing what was typed", () => {
    expect(closeMatches("gpt-4p", models)).toEqual(["gpt-4o", "gpt-4.1"]);
    expect(closeMatches("GPT-4O-MINI", models)).toEqual(["gpt-4o-mini"]);
    expect(closeMatches("sonnet", models)).toEqual(["claude-sonnet-4"]);
  });

  it("names none for a wild guess, and at most `limit`", () => {
    expect(closeMatches("llama-3-70b", models)).toEqual([]);
    expect(closeMatches("gpt", models, 2)).toHaveLength(2);
  });

  it("keeps closest's cut-off", () => {
    expect(closest("rnu", ["run", "resume"])).toBe("run");
    expect(closest("zzzz", ["run", "resume"])).toBeUndefined();
  });
});
