import { EngineError } from "./errors.js";
import type { EngineRun } from "./outcome.js";

/**
 * Steering: input typed while a turn runs. Each steer is journaled at once (`user.steered`), so a
 * crash cannot lose it, and reaches the model only at a step boundary (`steer.delivered`): after
 * the results of the reply's calls, before the next model request, never in the middle of a call.
 * Steers still undelivered when a session resumes are delivered at its next boundary.
 */
export class Steering {
  /** Appends in flight, in the order they were typed. */
  private chain: Promise<void> = Promise.resolve();
  private open = false;

  constructor(private readonly run: () => EngineRun | undefined) {}

  /** Accept steers from now on (the turn is running). */
  openGate(): void {
    this.open = true;
  }

  /** No more steers: the turn is ending (the caller starts a new turn with further input). */
  closeGate(): void {
    this.open = false;
  }

  /** Journal a steer now; rejected when no turn is running or its end has begun. */
  steer(text: string): Promise<void> {
    const run = this.run();
    if (!this.open || run === undefined)
      return Promise.reject(
        new EngineError("BAD_INPUT", "no turn is running to steer: start the next turn with this input"),
      );
    if (text.trim() === "")
      return Promise.reject(new EngineError("BAD_INPUT", "an empty steer says nothing"));
    const appended = this.chain.then(() => run.record({ type: "user.steered", data: { text } }));
    // A failed append stops the run through the engine's own appends; the chain goes on.
    this.chain = appended.catch(() => undefined);
    return appended;
  }

  /**
   * At a step boundary: wait for steers being journaled, then hand every undelivered one to the
   * model (one `steer.delivered`). True when something was delivered.
   */
  async deliver(run: EngineRun): Promise<boolean> {
    await this.chain;
    const count = run.state.pendingSteers.length;
    if (count === 0) return false;
    await run.record({ type: "steer.delivered", data: { step: run.state.replyCount, count } });
    return true;
  }
}
