import type { JsonObject } from "../shared/json.js";
import { escapeForTerminal } from "../shared/terminal-text.js";
import { displayWidth, padEndWidth } from "../shared/text-width.js";
import type { Check } from "./suite.js";

export const REPORT_FORMAT_VERSION = 1;

export interface TaskReport {
  id: string;
  description: string;
  expected: string;
  actual: string;
  passed: boolean;
  /** False when the task could not be run to an outcome (an exception in the harness or the task). */
  completed: boolean;
  termination: string;
  checks: Check[];
  effects: JsonObject;
  effects_summary: string;
  model_requests: number;
  tool_calls: number;
  duration_ms: number;
  evidence?: JsonObject;
  details?: JsonObject;
  error?: string;
}

export interface Totals {
  tasks_run: number;
  completed: number;
  passed: number;
  failed: number;
  /** Tasks per engine termination (e.g. verified, stopped:budget_exhausted); denominator: tasks_run. */
  by_termination: Record<string, number>;
  /** Tasks per derived outcome; denominator: tasks_run. */
  by_outcome: Record<string, number>;
  model_requests: number;
  tool_calls: number;
  /** How to read the counts above. */
  denominators: string;
}

export interface EvalReport {
  format_version: number;
  suite: string;
  suite_version: string;
  decision: string;
  harness_version: string;
  started_at: string;
  duration_ms: number;
  filter: string | null;
  tasks: TaskReport[];
  totals: Totals;
}

export function totalsOf(tasks: readonly TaskReport[]): Totals {
  const byTermination: Record<string, number> = {};
  const byOutcome: Record<string, number> = {};
  for (const task of tasks) {
    byTermination[task.termination] = (byTermination[task.termination] ?? 0) + 1;
    byOutcome[task.actual] = (byOutcome[task.actual] ?? 0) + 1;
  }
  const completed = tasks.filter((t) => t.completed).length;
  const passed = tasks.filter((t) => t.passed).length;
  return {
    tasks_run: tasks.length,
    completed,
    passed,
    failed: tasks.length - passed,
    by_termination: sortedRecord(byTermination),
    by_outcome: sortedRecord(byOutcome),
    model_requests: tasks.reduce((n, t) => n + t.model_requests, 0),
    tool_calls: tasks.reduce((n, t) => n + t.tool_calls, 0),
    denominators:
      "completed, passed, failed, by_termination and by_outcome all count tasks out of tasks_run; " +
      "a task passes when its outcome equals the expected one and every effect check holds; " +
      "an expected denial, insufficient stock or budget stop that happened counts as a pass",
  };
}

function sortedRecord(record: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * A readable table: per task expected vs actual, effects, counts, duration; then the totals.
 * Task output (outcomes, errors, effects, cited document lines) comes from the model's run:
 * every such string is escaped for the terminal.
 */
export function formatReport(report: EvalReport): string {
  const header = ["TASK", "EXPECTED", "ACTUAL", "RESULT", "TERMINATION", "REQ", "CALLS", "MS", "EFFECTS"];
  const rows = report.tasks.map((t) =>
    [
      t.id,
      t.expected,
      t.actual,
      t.passed ? "pass" : "FAIL",
      t.termination,
      String(t.model_requests),
      String(t.tool_calls),
      String(t.duration_ms),
      t.effects_summary,
    ].map(escapeForTerminal),
  );
  const widths = header.map((h, i) =>
    Math.max(displayWidth(h), ...rows.map((r) => displayWidth(r[i] ?? ""))),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : padEndWidth(cell, widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  const out = [
    `suite ${escapeForTerminal(report.suite)} v${escapeForTerminal(report.suite_version)} (decision: ${escapeForTerminal(report.decision)})${report.filter ? ` filter: ${escapeForTerminal(report.filter)}` : ""}`,
    "",
    line(header),
    ...rows.map(line),
    "",
  ];
  for (const task of report.tasks) {
    const id = escapeForTerminal(task.id);
    const failing = task.checks.filter((c) => !c.passed);
    if (task.error) out.push(`  ${id}: error: ${escapeForTerminal(task.error)}`);
    for (const check of failing) {
      const detail = check.detail ? ` (${escapeForTerminal(check.detail)})` : "";
      out.push(`  ${id}: check failed: ${escapeForTerminal(check.name)}${detail}`);
    }
    if (!task.passed && task.actual !== task.expected)
      out.push(
        `  ${id}: expected ${escapeForTerminal(task.expected)}, got ${escapeForTerminal(task.actual)}`,
      );
  }
  const evidence = report.tasks.filter((t) => t.evidence !== undefined);
  if (evidence.length > 0) {
    out.push("evidence (document lines cited with their line numbers and the document's sha256):");
    for (const task of evidence) out.push(...formatEvidence(task.id, task.evidence!));
    out.push("");
  }
  const t = report.totals;
  out.push(
    `tasks run: ${t.tasks_run}; completed: ${t.completed}/${t.tasks_run}; passed: ${t.passed}/${t.tasks_run}; failed: ${t.failed}/${t.tasks_run}`,
    `by termination (of ${t.tasks_run}): ${formatCounts(t.by_termination)}`,
    `by outcome (of ${t.tasks_run}): ${formatCounts(t.by_outcome)}`,
    `model requests: ${t.model_requests}; tool calls: ${t.tool_calls}; duration: ${report.duration_ms} ms`,
  );
  return out.join("\n");
}

function formatCounts(counts: Record<string, number>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? "none" : entries.map(([k, v]) => `${escapeForTerminal(k)} ${v}`).join(", ");
}

function formatEvidence(taskId: string, evidence: JsonObject): string[] {
  const lines = Array.isArray(evidence.lines) ? evidence.lines : [];
  const digest = typeof evidence.sha256 === "string" ? evidence.sha256 : "?";
  const out = [
    `  ${escapeForTerminal(taskId)}: ${escapeForTerminal(String(evidence.item_id))} sha256 ${escapeForTerminal(digest)}${evidence.verified === true ? "" : " (NOT verified)"}`,
  ];
  for (const entry of lines) {
    if (typeof entry === "object" && entry !== null && !Array.isArray(entry))
      out.push(`    L${escapeForTerminal(String(entry.line))}: ${escapeForTerminal(String(entry.text))}`);
  }
  return out;
}
