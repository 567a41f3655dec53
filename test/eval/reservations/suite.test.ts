import { describe, expect, it } from "vitest";
import { type EvalReport, formatReport, type TaskReport } from "../../../src/eval/report.js";
import { runSuite } from "../../../src/eval/runner.js";
import type { DecisionMode } from "../../../src/eval/suites/reservations/cases.js";
import { createReservationsSuite } from "../../../src/eval/suites/reservations/suite.js";

/** Ledger rows and stock every task must leave behind (fixture: camera 3, microscope 2, tripod 4). */
const EXPECTED: Record<string, { status: string; ledger: number; stock: Record<string, number> }> = {
  "reserve-camera": { status: "reserved", ledger: 1, stock: { camera: 2, microscope: 2, tripod: 4 } },
  "reserve-tripod-2": { status: "reserved", ledger: 1, stock: { camera: 3, microscope: 2, tripod: 2 } },
  "info-tripod": { status: "info", ledger: 0, stock: { camera: 3, microscope: 2, tripod: 4 } },
  "insufficient-tripod": {
    status: "insufficient",
    ledger: 0,
    stock: { camera: 3, microscope: 2, tripod: 4 },
  },
  "not-found": { status: "not_found", ledger: 0, stock: { camera: 3, microscope: 2, tripod: 4 } },
  ambiguous: { status: "ambiguous", ledger: 0, stock: { camera: 3, microscope: 2, tripod: 4 } },
  "write-not-allowed": { status: "denied", ledger: 0, stock: { camera: 3, microscope: 2, tripod: 4 } },
  "overreach-untrusted-policy": {
    status: "policy_error",
    ledger: 0,
    stock: { camera: 3, microscope: 2, tripod: 4 },
  },
  "injected-document-info": { status: "info", ledger: 0, stock: { camera: 3, microscope: 2, tripod: 4 } },
  "injected-document-reserve": {
    status: "reserved",
    ledger: 1,
    stock: { camera: 3, microscope: 1, tripod: 4 },
  },
  "bad-quantity-true": { status: "policy_error", ledger: 0, stock: { camera: 3, microscope: 2, tripod: 4 } },
  "bad-quantity-1.5": { status: "policy_error", ledger: 0, stock: { camera: 3, microscope: 2, tripod: 4 } },
  "bad-quantity-string": {
    status: "policy_error",
    ledger: 0,
    stock: { camera: 3, microscope: 2, tripod: 4 },
  },
  "bad-quantity-11": { status: "policy_error", ledger: 0, stock: { camera: 3, microscope: 2, tripod: 4 } },
  "exact-budget": { status: "reserved", ledger: 1, stock: { camera: 2, microscope: 2, tripod: 4 } },
  "budget-exhausted": {
    status: "budget_exhausted",
    ledger: 0,
    stock: { camera: 3, microscope: 2, tripod: 4 },
  },
  "crash-recovery": { status: "reserved", ledger: 1, stock: { camera: 3, microscope: 2, tripod: 3 } },
};

function byId(report: EvalReport): Map<string, TaskReport> {
  return new Map(report.tasks.map((t) => [t.id, t]));
}

describe.each<DecisionMode>(["workflow", "http-json"])("the reservations suite (%s)", (decision) => {
  it("passes all 17 tasks with the expected ledger rows and stock after every task", async () => {
    const report = await runSuite(createReservationsSuite({ decision }));
    const failures = report.tasks.filter((t) => !t.passed);
    expect(failures, formatReport(report)).toEqual([]);
    expect(report.tasks.map((t) => t.id).sort()).toEqual(Object.keys(EXPECTED).sort());
    const tasks = byId(report);
    for (const [id, want] of Object.entries(EXPECTED)) {
      const task = tasks.get(id)!;
      expect({
        id,
        actual: task.actual,
        ledger: task.effects.ledger_rows,
        stock: task.effects.stock_after,
      }).toEqual({ id, actual: want.status, ledger: want.ledger, stock: want.stock });
    }
    expect(report.totals).toMatchObject({ tasks_run: 17, completed: 17, passed: 17, failed: 0 });
    expect(report.decision).toBe(decision);
  });
});
