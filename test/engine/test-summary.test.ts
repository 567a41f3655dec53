import { describe, expect, it } from "vitest";
import { failingTests } from "../../src/engine/test-summary.js";

describe("failing tests read from a runner's summary", () => {
  it("reads each known runner's summary line", () => {
    expect(failingTests(" Test Files  1 failed | 2 passed (3)\n      Tests  2 failed | 5 passed (7)\n")).toBe(
      2,
    );
    expect(failingTests("      Tests  7 passed (7)\n")).toBe(0);
    expect(failingTests("Tests:       3 failed, 4 passed, 7 total\nSnapshots:   0 total\n")).toBe(3);
    expect(failingTests("Tests:       4 passed, 4 total\n")).toBe(0);
    expect(failingTests("=========== 2 failed, 5 passed, 1 error in 0.31s ===========\n")).toBe(3);
    expect(failingTests("============= 5 passed in 0.10s =============\n")).toBe(0);
    expect(failingTests("# tests 5\n# pass 3\n# fail 2\n")).toBe(2);
    expect(failingTests('<?xml version="1.0"?>\n<testsuites tests="9" failures="2" errors="1">\n')).toBe(3);
    expect(
      failingTests("--- FAIL: TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\texample.com/x\t0.01s\n"),
    ).toBe(2);
    expect(failingTests("ok  \texample.com/x\t0.01s\n")).toBe(0);
  });

  it("takes a runner's last summary (its total) and adds up different runners'", () => {
    expect(failingTests("# fail 4\n...\n# fail 1\n")).toBe(1);
    expect(failingTests("Tests:       1 failed, 1 passed, 2 total\n# fail 2\n")).toBe(3);
  });

  it("says nothing for output with no known summary, and is not fooled by failure-looking lines", () => {
    expect(failingTests("error: build failed\nFAILED\n")).toBeUndefined();
    expect(failingTests("")).toBeUndefined();
    expect(failingTests("log: 3 failed attempts to connect\n")).toBeUndefined();
  });
});
