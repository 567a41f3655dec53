import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { EvalReport } from "../../src/eval/report.js";
import { BIN, harness } from "../e2e/helpers.js";

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe("harness eval (built CLI)", () => {
  it("eval reservations --json prints a report whose totals match its tasks, and --out writes the same", async () => {
    expect(existsSync(BIN)).toBe(true);
    dir = await mkdtemp(join(tmpdir(), "harness-eval-cli-"));
    const out = join(dir, "report.json");
    const result = await harness(["eval", "reservations", "--json", "--out", out]);
    expect(result.code, result.stderr).toBe(0);
    const report = JSON.parse(result.stdout) as EvalReport;
    expect(report.suite).toBe("reservations");
    expect(report.tasks).toHaveLength(17);
    const passed = report.tasks.filter((t) => t.passed).length;
    const byTermination = report.tasks.reduce<Record<string, number>>((acc, t) => {
      acc[t.termination] = (acc[t.termination] ?? 0) + 1;
      return acc;
    }, {});
    expect(report.totals).toMatchObject({
      tasks_run: 17,
      completed: 17,
      passed,
      failed: 17 - passed,
      by_termination: byTermination,
    });
    expect(passed).toBe(17);
    expect(JSON.parse(await readFile(out, "utf8"))).toMatchObject({ totals: report.totals });
    expect(result.stdout).not.toContain(tmpdir());
  });

  it("a failing filter target and an unknown suite are usage errors", async () => {
    expect((await harness(["eval", "nosuch"])).code).toBe(64);
    expect((await harness(["eval", "reservations", "--filter", "nosuch"])).code).toBe(64);
    expect((await harness(["eval", "faults", "--decision", "http-json"])).code).toBe(64);
  });

  it("the readable table states the denominators", async () => {
    const result = await harness(["eval", "faults"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("tasks run: 6; completed: 6/6; passed: 6/6; failed: 0/6");
    expect(result.stdout).toMatch(
      /writes-disabled\s+stopped:acceptance_failed\s+stopped:acceptance_failed\s+pass/,
    );
  });
});
