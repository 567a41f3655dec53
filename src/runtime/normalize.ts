import type { ArtifactStore } from "../artifacts/store.js";
import type { JsonObject } from "../shared/json.js";
import type { ProposalRecord } from "./ports.js";
import { applyPreviewLimit } from "./projection.js";
import type { ToolResult } from "./result.js";

/** Where and when a call ran, for its result's trace. */
export interface RunFacts {
  batch: number;
  queueWaitMs: number;
  startedAt: number;
  attempts: number;
}

/**
 * The result as it is committed: content within the preview limit (the whole stored as an
 * artifact), the duration measured by the runtime, and a trace of how the call ran.
 */
export async function normalize(
  result: ToolResult,
  facts: RunFacts,
  previewLimitBytes: number,
  artifacts: ArtifactStore,
): Promise<ToolResult> {
  const limited = await applyPreviewLimit(result, previewLimitBytes, artifacts);
  const endedAt = Date.now();
  return {
    ...limited,
    duration_ms: endedAt - facts.startedAt,
    trace: {
      batch: facts.batch,
      queue_wait_ms: facts.queueWaitMs,
      started_at: new Date(facts.startedAt).toISOString(),
      ended_at: new Date(endedAt).toISOString(),
      attempts: facts.attempts,
      output_bytes: Buffer.byteLength(result.content),
      artifacts: [...(limited.artifact ? [limited.artifact.id] : []), ...artifactIdsIn(result.data)],
    },
  };
}

/** A proposing call's result: its proposals ride along until the engine journals them. */
export function asProposal(result: ToolResult, proposals: ProposalRecord[]): ToolResult {
  if (proposals.length === 0) return result;
  const ids = proposals.map((p) => p.proposal_id);
  const diffs = proposals.map((p) => p.diff).join("\n");
  return {
    ...result,
    summary: `proposed, not applied: ${result.summary}`,
    content: `PROPOSED (not applied; the workspace is unchanged until a reviewer runs harness apply)\n${result.content}\n${diffs}`,
    data: { ...result.data, proposals: ids },
    proposals,
  };
}

/** Artifact references anywhere in a result's data (objects whose id is their sha256). */
function artifactIdsIn(data: JsonObject | undefined): string[] {
  const ids: string[] = [];
  const visit = (value: unknown) => {
    if (typeof value !== "object" || value === null) return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    const record = value as Record<string, unknown>;
    if (typeof record.id === "string" && typeof record.sha256 === "string" && record.id === record.sha256) {
      ids.push(record.id);
    }
    for (const item of Object.values(record)) visit(item);
  };
  visit(data);
  return ids;
}
