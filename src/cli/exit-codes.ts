import type { RunStatus } from "../engine/options.js";

export const EXIT = {
  ok: 0,
  internal: 1,
  /** harness undo: some files had changed since and were left alone; harness audit: files changed outside the record. */
  conflicts: 1,
  stopped: 2,
  reviewRequired: 3,
  needsReview: 4,
  /** The journal cannot be acted on as it is: locked, torn, tampered, untrusted, or the key is unusable. */
  journalRefused: 5,
  usage: 64,
  cancelled: 130,
} as const;

export function exitCodeFor(status: RunStatus): number {
  switch (status) {
    case "verified":
    case "unverified":
      return EXIT.ok;
    case "stopped":
      return EXIT.stopped;
    case "review_required":
      return EXIT.reviewRequired;
    case "needs_review":
      return EXIT.needsReview;
    // An interrupted turn (the user stopped it; the session stays open) exits as a cancelled run does.
    case "cancelled":
    case "interrupted":
      return EXIT.cancelled;
  }
}
