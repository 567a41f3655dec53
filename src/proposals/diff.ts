/**
 * Proposals show their changes as unified diffs. The diff itself has one home,
 * `shared/unified-diff.ts` (on jsdiff), shared with every other place that shows a change; these
 * names stay here for the code that has always imported them from proposals.
 */
export { DIFF_CONTEXT_LINES, fileDiff, splitKeepingEnds, unifiedDiff } from "../shared/unified-diff.js";
