import type { ArtifactStore } from "../artifacts/store.js";
import type { AnyNewEvent } from "../journal/vocabulary.js";
import type { ImageRef } from "../protocol/types.js";
import { errorResult } from "../runtime/result.js";
import { EngineError } from "./errors.js";
import type { TurnAttachments } from "./options.js";
import type { EngineRun } from "./outcome.js";

/**
 * A session is a sequence of turns. The goal starts turn 1 (`user.input` in `session.started`'s
 * wake); each later turn starts with the user's next input, journaled as `user.input {text, turn}`,
 * and ends when the model replies without calls (then acceptance runs) or the user interrupts it.
 */

/** Refused before anything is appended: a turn needs something to say. */
export function checkInput(input: string | undefined): void {
  if (input !== undefined && input.trim() === "")
    throw new EngineError("BAD_INPUT", "the next turn needs input (an empty prompt was given)");
}

/**
 * Start the next turn. Calls the last reply asked for that never started (a crash or an interrupt
 * between batches) are closed as cancelled first, so every call keeps exactly one result and
 * nothing runs that the user has moved on from.
 */
export async function beginTurn(run: EngineRun, text: string, attachments?: TurnAttachments): Promise<void> {
  const unanswered: AnyNewEvent[] = run.state.pendingCalls().map((call) => ({
    type: "tool.result",
    data: errorResult(
      { call_id: call.id, name: call.name },
      "CANCELLED",
      "Not run: the user started a new turn before this call started.",
      { data: { started: false }, operationApplied: false },
    ),
  }));
  await run.record(
    ...unanswered,
    ...(await inputRecords(run.options.runtime.artifacts, text, run.state.turn + 1, attachments)),
  );
}

/**
 * A turn's input as records: the command it was expanded from, if any, then `user.input` with
 * its images stored as artifacts first (the record names them by digest, the bytes are kept).
 */
export async function inputRecords(
  artifacts: ArtifactStore,
  text: string,
  turn: number,
  attachments: TurnAttachments | undefined,
): Promise<AnyNewEvent[]> {
  const images: ImageRef[] = [];
  for (const image of attachments?.images ?? []) {
    const stored = await artifacts.put(image.bytes);
    images.push({
      artifact: stored.id,
      sha256: stored.sha256,
      media_type: image.media_type,
      bytes: stored.bytes,
      width: image.width,
      height: image.height,
    });
  }
  return [
    ...(attachments?.command ? [{ type: "command.expanded", data: attachments.command } as const] : []),
    { type: "user.input", data: { text, turn, ...(images.length > 0 ? { images } : {}) } },
  ];
}
