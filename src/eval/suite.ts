import type { FileJournalStore } from "../journal/file-store.js";
import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import type { JsonObject } from "../shared/json.js";
import type { DiskWorkspaceFs } from "../workspace/disk-fs.js";

/**
 * Evaluation suites: fixed tasks run through the real engine, each in a fresh temporary
 * workspace, judged by host-side observations (journal records, database rows, file bytes),
 * never by what the decision source said.
 */

/** A fresh workspace for one task: a temp directory with its own `.harness` journal. */
export interface TaskWorkspace {
  /** Absolute host path; never copied into a report. */
  readonly root: string;
  readonly fs: DiskWorkspaceFs;
  readonly store: FileJournalStore;
  /** Where a session's artifacts live. */
  artifactsDir(session: string): string;
}

/** One host-side assertion about a task's effects. */
export interface Check {
  name: string;
  passed: boolean;
  detail?: string;
}

/** What running a task observed. */
export interface TaskRun {
  /** The outcome the evaluator derived (a finish status, or a termination label for faults). */
  actual: string;
  /** How the engine ended: `verified`, `stopped:budget_exhausted`, `review_required:unknown_outcome`, ... */
  termination: string;
  /** Assertions about effects; every one must pass. */
  checks: Check[];
  /** Observed effects (ledger rows, stock before/after, file contents), JSON for the report. */
  effects: JsonObject;
  /** One line for the table. */
  effectsSummary: string;
  model_requests: number;
  tool_calls: number;
  /** Cited document lines with line numbers and the content digest, when the task read one. */
  evidence?: JsonObject;
  /** Extra facts worth keeping in the report (e.g. the claim check). */
  details?: JsonObject;
}

export interface EvalTask {
  readonly id: string;
  readonly description: string;
  /** The outcome that counts as a pass (together with all checks). */
  readonly expected: string;
  run(workspace: TaskWorkspace, signal: AbortSignal): Promise<TaskRun>;
}

export interface EvalSuite {
  readonly name: string;
  /** Bumped whenever a task, an expectation or a check changes. */
  readonly version: string;
  readonly description: string;
  /** The decision source the tasks use (recorded in the report). */
  readonly decision: string;
  readonly tasks: readonly EvalTask[];
  /** Start shared resources (e.g. a local policy server) before the first task. */
  setup?(): Promise<void>;
  /** Release them after the last task, also when a task failed. */
  teardown?(): Promise<void>;
}

export type ToolResultData = EventData<"tool.result">;

/** The journal's results of the calls to one tool, in order: what checks judge a run by. */
export function toolResults(records: readonly AnyRecord[], name: string): ToolResultData[] {
  return records.flatMap((r) => (r.type === "tool.result" && r.data.name === name ? [r.data] : []));
}
