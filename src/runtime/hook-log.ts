import type { AnyNewEvent } from "../journal/vocabulary.js";
import type { ToolCall } from "../protocol/types.js";
import type { HookPoint } from "./hook-points.js";
import { deferRecord, type HookCallContext, type HookPort, type HookRecord, type Recorder } from "./ports.js";
import type { SnapshotEntry } from "./registry.js";
import type { ToolResult } from "./result.js";

/**
 * The hooks a run calls, and the decisions they return until the journal takes them. Decisions
 * gathered between writes go into the journal with the next write, so the journal keeps them
 * in the order they happened at no extra fsync.
 */
export class HookLog {
  private pending: HookRecord[] = [];

  constructor(
    private readonly sessionId: string,
    readonly hooks: HookPort | undefined,
  ) {}

  /** What a hook is shown of a call. */
  context(call: ToolCall, entry?: SnapshotEntry): HookCallContext {
    return {
      session: this.sessionId,
      callId: call.id,
      tool: call.name,
      arguments: structuredClone(call.arguments),
      effect: entry?.tool.effect ?? "unknown",
    };
  }

  async notify(
    point: HookPoint,
    call: ToolCall,
    entry: SnapshotEntry | undefined,
    status?: ToolResult["status"],
  ): Promise<void> {
    if (!this.hooks) return;
    const context = this.context(call, entry);
    const seen = status === undefined ? context : { ...context, status };
    this.pending.push(...(await this.hooks.notify(point, seen)));
  }

  /** Admit decisions are journaled at once: the denial that follows must not precede them. */
  async recordNow(records: HookRecord[], recorder: Recorder): Promise<void> {
    this.pending.push(...records);
    if (this.pending.length > 0) await recorder.record([]);
  }

  /** Records that ride along with the next write. */
  keep(records: HookRecord[]): void {
    this.pending.push(...records);
  }

  /** A recorder that writes the pending hook records ahead of the events it is given. */
  journaling(recorder: Recorder): Recorder {
    const withHooks = (events: AnyNewEvent[]): AnyNewEvent[] => [
      ...this.drain().map((data): AnyNewEvent => ({ type: "hook.decided", data })),
      ...events,
    ];
    return {
      record: (events) => recorder.record(withHooks(events)),
      defer: (events) => deferRecord(recorder, withHooks(events)),
    };
  }

  /** Hook records not yet written (the engine journals what is left after a reply's calls). */
  drain(): HookRecord[] {
    const all = this.pending;
    this.pending = [];
    return all;
  }
}
