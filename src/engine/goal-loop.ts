import type { EventData } from "../journal/vocabulary.js";
import type { CheckOutcome } from "./acceptance.js";
import type { GoalLoop } from "./options.js";
import { failingTests } from "./test-summary.js";

/*
 * The goal loop: the model finished but the host's checks fail, so their failures become its next
 * input and it goes on, until they pass, the attempts run out, or it stops making progress. The
 * verdict is still only the checks'; progress is measured by the host too, never taken from the
 * model's words: more checks passing, or (same checks passing) fewer failing tests where a
 * check's output has a runner's summary (test-summary.ts).
 */

export type Attempt = EventData<"acceptance.attempt">;

/** Characters of one check's output given back to the model (its tail; the whole is journaled). */
const FEEDBACK_OUTPUT_CHARS = 1500;

/** The record of the attempt that just ran, after `before` in this turn. */
export function nextAttempt(
  before: readonly Attempt[],
  results: readonly CheckOutcome[],
  loop: GoalLoop,
): Attempt {
  const n = before.length + 1;
  const passed = results.filter((r) => r.passed).length;
  const failed = results.length - passed;
  const tests = sumFailing(results);
  const progress = { checks_passed: passed, ...(tests !== undefined ? { tests_failed: tests } : {}) };
  const improved = before.every((earlier) => better(progress, earlier.progress));
  const previous = before[before.length - 1];
  const stalled = improved ? 0 : (previous?.progress.stalled ?? 0) + 1;
  const continued = failed > 0 && n < loop.attempts && stalled < loop.noProgress;
  return {
    n,
    passed,
    failed,
    progress: { ...progress, improved, stalled },
    continued,
    ...(continued ? { feedback: feedback(n, loop.attempts, results) } : {}),
  };
}

/** Failing tests over every check whose output names them; undefined when none does. */
function sumFailing(results: readonly CheckOutcome[]): number | undefined {
  let total: number | undefined;
  for (const result of results) {
    const count = failingTests(result.output ?? "");
    if (count !== undefined) total = (total ?? 0) + count;
  }
  return total;
}

/** Whether `now` improves on `then`: more checks pass, or as many with fewer failing tests. */
function better(
  now: { checks_passed: number; tests_failed?: number | undefined },
  then: { checks_passed: number; tests_failed?: number | undefined },
): boolean {
  if (now.checks_passed !== then.checks_passed) return now.checks_passed > then.checks_passed;
  return (
    now.tests_failed !== undefined && then.tests_failed !== undefined && now.tests_failed < then.tests_failed
  );
}

/** What the model is told: which checks failed, how, and the end of what they printed. */
function feedback(n: number, attempts: number, results: readonly CheckOutcome[]): string {
  const failing = results.filter((r) => !r.passed);
  const lines = [
    `[harness: acceptance attempt ${n} of ${attempts}] The host's acceptance checks failed ` +
      `(${failing.length} of ${results.length}). The task is not done until they pass: fix the cause, then finish again.`,
  ];
  for (const check of failing) {
    const exit =
      check.exit_code === undefined
        ? ""
        : check.exit_code === null
          ? " (no exit code)"
          : ` (exit ${check.exit_code})`;
    lines.push("", `check failed: ${check.name}${exit}`);
    const output = check.output ?? "";
    if (output !== "") {
      const tail =
        output.length > FEEDBACK_OUTPUT_CHARS ? `…${output.slice(-FEEDBACK_OUTPUT_CHARS)}` : output;
      lines.push("output (end):", tail);
    }
    for (const id of check.output_artifacts ?? []) lines.push(`whole output: read_artifact {"id": "${id}"}`);
  }
  return lines.join("\n");
}
