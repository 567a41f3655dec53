import type { AnyNewEvent } from "../journal/vocabulary.js";
import type { CheckOutcome } from "./acceptance.js";
import {
  acceptanceFailedAfterDenials,
  changesDeniedStop,
  everyChangeDenied,
  someChangesDenied,
} from "./denied-changes.js";
import { nextAttempt } from "./goal-loop.js";
import type { RunSummary } from "./options.js";
import { cancel, type EngineRun, stop, summary } from "./outcome.js";

/** finish's answer when a goal loop goes on: the checks' failures are the model's next input. */
export const CONTINUE = Symbol("continue");

/**
 * The model has stopped calling tools: pending proposals wait for review; otherwise the host's
 * own acceptance checks decide whether the run is verified.
 */
export async function finish(run: EngineRun, answer: string): Promise<RunSummary | typeof CONTINUE> {
  const pending = [...run.state.proposals.values()].filter(
    (p) => !run.state.appliedProposals.has(p.proposal_id),
  );
  if (run.options.proposals && pending.length > 0) {
    // Acceptance runs after a reviewer applies the proposals, never against an unchanged workspace.
    return stop(
      run,
      "needs_review",
      "proposals_pending",
      `${pending.length} proposed change(s) await review: harness diff ${run.options.sessionId}; harness apply ${run.options.sessionId}`,
    );
  }
  const checks = run.options.acceptance;
  const denied = checks.length === 0 && run.options.changesDeniedStops ? everyChangeDenied(run) : undefined;
  if (denied) return stop(run, "stopped", ...changesDeniedStop(denied), denied.allow);
  if (checks.length === 0) {
    await run.record({ type: "run.finished", data: { status: "unverified", answer } });
    return summary(run);
  }
  const results = await runAcceptance(run);
  if (run.signal.aborted) return cancel(run);
  const accepted = results.every((r) => r.passed);
  const loop = run.options.goalLoop;
  if (loop !== undefined) {
    const attempt = nextAttempt(run.state.turnAttempts, results, loop);
    await run.record({ type: "acceptance.attempt", data: attempt });
    if (attempt.continued) return CONTINUE;
    if (!accepted && attempt.progress.stalled >= loop.noProgress)
      return stop(
        run,
        "stopped",
        "no_progress",
        `the acceptance checks failed ${attempt.n} time(s) and the last ${attempt.progress.stalled} attempt(s) made no progress (--no-progress ${loop.noProgress})`,
      );
    if (!accepted)
      return stop(
        run,
        "stopped",
        "acceptance_failed",
        `the acceptance checks still failed after ${attempt.n} attempt(s) (--until-accepted ${loop.attempts})`,
      );
  }
  if (!accepted) {
    // What was denied may be why the checks fail: say which flags would have allowed it.
    const refused = run.options.changesDeniedStops ? someChangesDenied(run) : undefined;
    if (refused)
      return stop(run, "stopped", "acceptance_failed", acceptanceFailedAfterDenials(refused), refused.allow);
    return stop(run, "stopped", "acceptance_failed", "the model finished but the acceptance checks failed");
  }
  await run.record({ type: "run.finished", data: { status: "verified", answer } });
  return summary(run);
}

/** A finished session is judged by the workspace as it is now, not by its old success. */
export async function recheckFinished(run: EngineRun): Promise<RunSummary> {
  const outcome = run.state.outcome;
  const answer = outcome?.kind === "finished" ? outcome.data.answer : "";
  if (run.options.acceptance.length === 0) return summary(run);
  const accepted = (await runAcceptance(run)).every((r) => r.passed);
  if (run.signal.aborted) return cancel(run);
  if (!accepted) {
    return stop(
      run,
      "stopped",
      "acceptance_failed",
      "the recorded completion no longer holds: acceptance failed now",
    );
  }
  await run.record({ type: "run.finished", data: { status: "verified", answer } });
  return summary(run);
}

async function runAcceptance(run: EngineRun): Promise<CheckOutcome[]> {
  const check = async () => {
    const results = [];
    for (const check of run.options.acceptance)
      results.push(await check.run(run.signal, run.options.runtime.artifacts));
    return results;
  };
  // Acceptance commands run the model's code, which may write: compared like a shell call.
  const effects = run.options.runtime.effects;
  const journal = {
    record: (events: AnyNewEvent[]) => run.record(...events),
    nextSeq: () => run.state.records,
  };
  const { value: results, found } = effects
    ? await effects.around("acceptance", journal, check)
    : { value: await check() };
  const accepted = results.every((r) => r.passed);
  const changed = found ? [effects!.event(`acceptance:${run.state.records}`, found)] : [];
  await run.record(...changed, { type: "acceptance.checked", data: { accepted, checks: results } });
  return results;
}
