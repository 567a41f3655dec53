import { describe, expect, it } from "vitest";
import { type EvalReport, formatReport, type TaskReport, totalsOf } from "../../src/eval/report.js";

const HOSTILE = "\u001b]0;pwned\u0007\r\u001b[2K\u202e\u009b1A\ntasks run: 17; passed: 17/17";

describe("eval report: task output from a model's run", () => {
  it("is escaped in the table, the failures and the cited evidence", () => {
    const task: TaskReport = {
      id: "search-1",
      description: "find a camera",
      expected: "answered",
      actual: `claimed${HOSTILE}`,
      passed: false,
      completed: true,
      termination: "verified",
      checks: [{ name: "ledger unchanged", passed: false, detail: `row ${HOSTILE}` }],
      effects: {},
      effects_summary: `ledger +1${HOSTILE}`,
      model_requests: 2,
      tool_calls: 1,
      duration_ms: 5,
      evidence: {
        item_id: `cam${HOSTILE}`,
        sha256: "ab",
        verified: true,
        lines: [{ line: 3, text: HOSTILE }],
      },
      error: `boom${HOSTILE}`,
    };
    const report: EvalReport = {
      format_version: 1,
      suite: "reservations",
      suite_version: "1",
      decision: "workflow",
      harness_version: "0.1.0",
      started_at: "2026-01-01T00:00:00.000Z",
      duration_ms: 5,
      filter: null,
      tasks: [task],
      totals: totalsOf([task]),
    };
    const text = formatReport(report);
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    // Harness's own totals line is the only line that starts like one.
    expect(text.split("\n").filter((line) => line.startsWith("tasks run:"))).toEqual([
      "tasks run: 1; completed: 1/1; passed: 0/1; failed: 1/1",
    ]);
    expect(text).toContain("boom\\x1b]0;pwned\\x07\\x0d\\x1b[2K\\u202e\\x9b1A\\x0atasks run: 17");
    expect(text).toContain("L3: \\x1b]0;pwned");
    expect(text).toContain("row \\x1b]0;pwned");
  });
});
