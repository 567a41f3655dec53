import type { AnyNewEvent, EventData } from "../journal/vocabulary.js";
import { digestOf } from "../shared/hash.js";
import { type OrderedCommitter, reportFinished } from "./commit.js";
import { permissionRecord } from "./denials.js";
import type { ProgressListener, Recorder } from "./ports.js";
import type { Prepared } from "./prepare.js";
import type { ToolResult } from "./result.js";

/** How one batch of authorized, mutually non-conflicting calls runs. */
export interface BatchRun {
  batch: readonly Prepared[];
  batchId: number;
  recorder: Recorder;
  committer: OrderedCommitter;
  poolSize: number;
  progress?: ProgressListener | undefined;
  /** Execute one call to its normalized result. */
  run(prepared: Prepared, queueWaitMs: number): Promise<ToolResult>;
}

/**
 * Intent is durable before execution: every call of the batch is journaled as `tool.started`
 * in one write (one fsync) before any handler of the batch runs, so a crash leaves a record of
 * every call that may have had an effect. Then up to `poolSize` calls run at once; each result
 * is committed as soon as the calls before it have theirs.
 */
export async function runBatch(run: BatchRun): Promise<void> {
  const { batch, committer } = run;
  const queuedAt = Date.now();
  await run.recorder.record(batch.map((p) => startedEvent(p, run.batchId)));

  let next = 0;
  const worker = async () => {
    while (next < batch.length) {
      const prepared = batch[next++];
      if (!prepared) break;
      const result = await run.run(prepared, Date.now() - queuedAt);
      committer.complete(prepared.index, result);
      reportFinished(run.progress, result);
      await committer.flush();
    }
  };
  const pool = Math.max(1, run.poolSize);
  await Promise.all(Array.from({ length: Math.min(pool, batch.length) }, worker));
}

/** A call's `tool.started`; `parentCallId` for a program's call inside another call. */
export function startedEvent(p: Prepared, batchId: number, parentCallId?: string): AnyNewEvent {
  const data: EventData<"tool.started"> = {
    call_id: p.call.id,
    name: p.call.name,
    arguments: p.call.arguments,
    arguments_hash: digestOf(p.call.arguments),
    tool_version: p.entry.tool.version,
    schema_digest: p.entry.schemaDigest,
    effect: p.entry.tool.effect,
    batch: batchId,
  };
  if (p.permission) data.permission = permissionRecord(p.permission);
  if (parentCallId !== undefined) data.parent_call_id = parentCallId;
  return { type: "tool.started", data };
}
