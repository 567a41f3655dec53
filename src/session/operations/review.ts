import { SessionState } from "../../engine/state.js";
import type { JournalStore } from "../../journal/store.js";
import type { EventData } from "../../journal/vocabulary.js";
import { UsageError } from "../usage-error.js";

export type ReviewResolution = EventData<"review.resolved">["resolution"];

export interface UnknownOutcome {
  call_id: string;
  name: string;
  summary: string;
  /** The call's arguments as started ({} when its start was not recorded). */
  arguments: EventData<"tool.started">["arguments"];
}

/**
 * The calls of a session whose outcome is unknown and not conclusively resolved. A listing only:
 * it reads without the writer lock, so it works while a run holds the session.
 */
export async function unknownOutcomes(store: JournalStore, sessionId: string): Promise<UnknownOutcome[]> {
  const state = SessionState.from(await store.read(sessionId));
  return state.unresolvedUnknowns().map((r) => ({
    call_id: r.call_id,
    name: r.name,
    summary: r.summary,
    arguments: state.started.get(r.call_id)?.arguments ?? {},
  }));
}

export interface ReviewRequest {
  callId: string;
  resolution: ReviewResolution;
  /** How the person established the outcome (non-empty). */
  evidence: string;
  by: string;
}

export interface ReviewReport {
  /** Unknown outcomes still unresolved after this one (0: the session can resume). */
  left: number;
  /** The session as it stands after the resolution (the writer's records). */
  state: SessionState;
}

/**
 * Record a person's resolution of a call whose outcome is unknown (harness review). The decision
 * is made on the records read under the writer lock, so no other writer can append between the
 * check and the resolution: a call that another review settled as applied or not applied in the
 * meantime is refused (a resumed run may already have acted on that answer).
 */
export async function resolveReview(
  store: JournalStore,
  sessionId: string,
  request: ReviewRequest,
): Promise<ReviewReport> {
  const evidence = request.evidence.trim();
  if (!evidence) throw new UsageError("--evidence TEXT is required: say how you established the outcome");
  const writer = await store.openWriter(sessionId, { create: false });
  try {
    const state = SessionState.from(await writer.readAll());
    if (state.results.get(request.callId)?.status !== "unknown") {
      throw new UsageError(
        `call "${request.callId}" of session ${sessionId} has no unknown outcome to resolve`,
      );
    }
    const earlier = state.resolutions.get(request.callId);
    if (earlier !== undefined && earlier.resolution !== "undetermined") {
      throw new UsageError(
        `call "${request.callId}" of session ${sessionId} was already resolved as ${earlier.resolution} by ${earlier.by} ` +
          `(evidence: ${earlier.evidence}); a conclusive resolution stands, since a resumed run may have acted on it`,
      );
    }
    await writer.append([
      {
        type: "review.resolved",
        data: { call_id: request.callId, resolution: request.resolution, evidence, by: request.by },
      },
    ]);
    const after = SessionState.from(await writer.readAll());
    return { left: after.unresolvedUnknowns().length, state: after };
  } finally {
    await writer.close();
  }
}
