import { type EvalReport, REPORT_FORMAT_VERSION, type TaskReport, totalsOf } from "./report.js";
import type { EvalSuite, EvalTask } from "./suite.js";
import { createTaskWorkspace } from "./workspace.js";

export interface RunSuiteOptions {
  /** Run only the task with this id (exact match). */
  filter?: string;
  harnessVersion?: string;
  signal?: AbortSignal;
  /** Called after each task (progress output). */
  onTask?(report: TaskReport): void;
  /** Keep the temp workspaces (for debugging); default false. */
  keepWorkspaces?: boolean;
}

export class SuiteError extends Error {
  override readonly name = "SuiteError";
}

/** Run a suite's tasks in order, each in a fresh temp workspace, and build the report. */
export async function runSuite(suite: EvalSuite, options: RunSuiteOptions = {}): Promise<EvalReport> {
  const tasks =
    options.filter === undefined ? suite.tasks : suite.tasks.filter((t) => t.id === options.filter);
  if (tasks.length === 0) {
    throw new SuiteError(
      `no task "${options.filter}" in suite ${suite.name} (tasks: ${suite.tasks.map((t) => t.id).join(", ")})`,
    );
  }
  const signal = options.signal ?? new AbortController().signal;
  const startedAt = new Date();
  const began = Date.now();
  const reports: TaskReport[] = [];
  await suite.setup?.();
  try {
    for (const task of tasks) {
      if (signal.aborted) break;
      const report = await runTask(task, signal, options.keepWorkspaces ?? false);
      reports.push(report);
      options.onTask?.(report);
    }
  } finally {
    await suite.teardown?.();
  }
  return {
    format_version: REPORT_FORMAT_VERSION,
    suite: suite.name,
    suite_version: suite.version,
    decision: suite.decision,
    harness_version: options.harnessVersion ?? "unknown",
    started_at: startedAt.toISOString(),
    duration_ms: Date.now() - began,
    filter: options.filter ?? null,
    tasks: reports,
    totals: totalsOf(reports),
  };
}

async function runTask(task: EvalTask, signal: AbortSignal, keep: boolean): Promise<TaskReport> {
  const workspace = await createTaskWorkspace(task.id);
  const began = Date.now();
  try {
    const run = await task.run(workspace, signal);
    const report: TaskReport = {
      id: task.id,
      description: task.description,
      expected: task.expected,
      actual: run.actual,
      passed: run.actual === task.expected && run.checks.every((c) => c.passed),
      completed: true,
      termination: run.termination,
      checks: run.checks,
      effects: run.effects,
      effects_summary: run.effectsSummary,
      model_requests: run.model_requests,
      tool_calls: run.tool_calls,
      duration_ms: Date.now() - began,
    };
    if (run.evidence !== undefined) report.evidence = run.evidence;
    if (run.details !== undefined) report.details = run.details;
    return report;
  } catch (error) {
    return {
      id: task.id,
      description: task.description,
      expected: task.expected,
      actual: "error",
      passed: false,
      completed: false,
      termination: "error",
      checks: [],
      effects: {},
      effects_summary: "",
      model_requests: 0,
      tool_calls: 0,
      duration_ms: Date.now() - began,
      error: describeError(error, workspace.root),
    };
  } finally {
    if (!keep) await workspace.remove();
  }
}

/** A one-line error without stack or host paths. */
function describeError(error: unknown, root: string): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.split(root).join("<workspace>").split("\n")[0]!.slice(0, 300);
}
