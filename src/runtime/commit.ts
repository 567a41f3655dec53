import type { AnyNewEvent } from "../journal/vocabulary.js";
import { deferRecord, type ProgressListener, type Recorder } from "./ports.js";
import type { ToolResult } from "./result.js";

/** Tell a live observer that a call has its result (before it is committed, in any order). */
export function reportFinished(progress: ProgressListener | undefined, result: ToolResult): void {
  progress?.callFinished?.({
    call_id: result.call_id,
    name: result.name,
    status: result.status,
    duration_ms: result.duration_ms,
    summary: result.summary,
  });
}

/**
 * Every call of a reply ends in exactly one committed result, in call order: a result is
 * committed as soon as every earlier call has one, whatever order the calls finished in.
 */
export class OrderedCommitter {
  readonly committed: ToolResult[] = [];
  private readonly results: (ToolResult | undefined)[];
  private readonly finishedAt: number[] = [];
  private next = 0;
  private flushing: Promise<void> = Promise.resolve();

  /** `decided` holds the results known before anything runs (by call index); reported at once. */
  constructor(
    decided: readonly (ToolResult | undefined)[],
    private readonly recorder: Recorder,
    private readonly progress?: ProgressListener,
  ) {
    this.results = [...decided];
    for (const result of decided) if (result) reportFinished(progress, result);
  }

  isDone(index: number): boolean {
    return this.results[index] !== undefined;
  }

  /** A result decided without running the call (a denial): reported live, committed in order. */
  settle(index: number, result: ToolResult): void {
    this.complete(index, result);
    reportFinished(this.progress, result);
  }

  complete(index: number, result: ToolResult): void {
    this.results[index] = result;
    this.finishedAt[index] = Date.now();
  }

  /**
   * Journal every result whose predecessors all have one; one write per flush. The write that
   * completes every call is deferred: nothing runs any more, so the next durable append (the
   * next model.started at the latest, before a request leaves the process) carries it. Earlier
   * writes stay durable at once: a call still running must not make a finished one unknown.
   */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      const ready: ToolResult[] = [];
      while (this.next < this.results.length && this.results[this.next] !== undefined) {
        ready.push(this.results[this.next] as ToolResult);
        this.next += 1;
      }
      if (ready.length === 0) return;
      const now = Date.now();
      const events: AnyNewEvent[] = [];
      for (const [offset, result] of ready.entries()) {
        const finished = this.finishedAt[this.next - ready.length + offset];
        if (result.trace && finished !== undefined) result.trace.commit_wait_ms = now - finished;
        events.push(...resultEvents(result));
      }
      const last = this.next === this.results.length;
      await (last ? deferRecord(this.recorder, events) : this.recorder.record(events));
      this.committed.push(...ready);
    });
    return this.flushing;
  }
}

/** A result's records: its proposals and workspace change first, then the `tool.result` itself. */
export function resultEvents(result: ToolResult): AnyNewEvent[] {
  const events: AnyNewEvent[] = [];
  const { proposals, workspace, ...settled } = result;
  for (const proposal of proposals ?? []) {
    events.push({ type: "proposal.recorded", data: { ...proposal, call_id: result.call_id } });
  }
  if (workspace) {
    events.push({
      type: "workspace.changed",
      data: { call_id: result.call_id, source: workspace.source, ...workspace.change },
    });
  }
  events.push({ type: "tool.result", data: settled });
  return events;
}
