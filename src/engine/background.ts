import type { EffectsJournal } from "../runtime/workspace-effects.js";
import type { EngineRun } from "./outcome.js";

/**
 * The engine's side of the session's background processes (tools/shell/background.ts): their
 * records go to this run's journal while it runs, the ones a crashed harness left behind are
 * reported lost on resume, and the turn's end stops those kept only for the turn.
 */

/**
 * Once the session has its header: records held since the last run (a TTL that fired between
 * turns) are written, then every process the journal says runs but this harness process did not
 * start (it was started by one that crashed or was killed) gets `process.lost`, after whatever is
 * left of its process group was killed. The fold tells the model.
 */
export async function settleBackground(run: EngineRun): Promise<void> {
  const supervision = run.options.processes;
  const registry = supervision?.background;
  if (registry === undefined) return;
  await registry.attach((event) => run.record(event));
  for (const [id, started] of [...run.state.backgroundRunning]) {
    if (registry.has(id)) continue;
    const killed = await supervision!.killSurvivors({
      pgid: started.pgid,
      bootId: started.boot_id,
      startTicks: started.start_ticks,
    });
    await run.record({ type: "process.lost", data: { process_id: id, killed } });
  }
}

/**
 * The turn is over (finished, stopped or interrupted): processes kept for the turn are stopped,
 * every one on an interrupt, and the workspace is compared so what they changed is recorded as
 * the calls' that started them. Then records wait for the next run.
 */
export async function endTurnBackground(
  run: EngineRun,
  interrupted: boolean,
  journal: EffectsJournal,
): Promise<void> {
  const registry = run.options.processes?.background;
  if (registry === undefined) return;
  try {
    await registry.endTurn(interrupted);
    // Only a background process's writes need this comparison; a turn that started none (or whose
    // processes were all compared already) ends as before, with nothing after its last record.
    if (registry.effectsOwner() !== undefined) await run.options.runtime.effects?.outside(journal);
  } finally {
    registry.detach();
  }
}
