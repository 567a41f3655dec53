import { describe, expect, it } from "vitest";
import { formatReport } from "../../src/eval/report.js";
import { runSuite } from "../../src/eval/runner.js";
import { createFaultsSuite } from "../../src/eval/suites/faults.js";
import { demoRun } from "../../src/examples/demo/script.js";

describe("the faults suite", () => {
  it("every row of the fault table shows its expected observation and evidence", async () => {
    const report = await runSuite(createFaultsSuite(demoRun));
    expect(
      report.tasks.filter((t) => !t.passed),
      formatReport(report),
    ).toEqual([]);
    const rows = Object.fromEntries(
      report.tasks.map((t) => [t.id, { actual: t.actual, file: t.effects.file }]),
    );
    expect(rows).toEqual({
      "truncated-arguments": { actual: "stopped:protocol_error", file: "helo, harness\n" },
      "writes-disabled": { actual: "stopped:acceptance_failed", file: "helo, harness\n" },
      "modified-after-read": { actual: "unverified", file: "helo, someone else's edit\n" },
      "started-without-result": { actual: "review_required:unknown_outcome", file: "hello, harness\n" },
      "model-claims-completion": { actual: "stopped:acceptance_failed", file: "helo, harness\n" },
      "changed-after-finish": { actual: "stopped:acceptance_failed", file: "hello, harness\nand more\n" },
    });
    expect(report.totals).toMatchObject({ tasks_run: 6, completed: 6, passed: 6, failed: 0 });
  });

  it("--filter runs one task; an unknown id is an error", async () => {
    const report = await runSuite(createFaultsSuite(demoRun), { filter: "writes-disabled" });
    expect(report.tasks.map((t) => t.id)).toEqual(["writes-disabled"]);
    expect(report.totals.tasks_run).toBe(1);
    await expect(runSuite(createFaultsSuite(demoRun), { filter: "nope" })).rejects.toThrow(/no task "nope"/);
  });
});
