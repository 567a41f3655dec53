import type { AnyNewEvent } from "../journal/vocabulary.js";
import type { ToolCall } from "../protocol/types.js";
import type { HookPoint } from "./hook-points.js";
import { deferRecord, type HookCallContext, type HookPort, type HookRecord, type Recorder } from "./ports.js";
import type { SnapshotEntry } from "./registry.js";
import type { ToolResult } from "./result.js";
import type { EffectsJournal, WorkspaceEffects } from "./workspace-effects.js";

/** What recording a hook's workspace changes needs: the session's record, and the next record's seq. */
export interface HookEffects {
  effects: WorkspaceEffects;
  nextSeq(): number;
}

/**
 * The hooks a run calls, and the decisions they return until the journal takes them. Decisions
 * gathered between writes go into the journal with the next write, so the journal keeps them
 * in the order they happened at no extra fsync.
 *
 * A hook is a process of the user's that may change the workspace (a command hook writing a
 * file): with a workspace record, the tree is compared around every notify and admit hook that
 * applies, and what it changed is journaled at once as `source: "hook"`, call
 * `hook:POINT:CALL_ID`, not left to be found as `outside`. Wrap hooks, and hooks that run while a
 * process-running call is compared (before/after its execution), change the workspace as part of
 * that call and are recorded as its.
 */
export class HookLog {
  private pending: HookRecord[] = [];
  /** The hooks as the runtime calls them: compared around when the session records its workspace. */
  readonly hooks: HookPort | undefined;
  /** Where a hook's change is journaled: the current run's recorder (set by `journaling`). */
  private journal: EffectsJournal | undefined;

  constructor(
    private readonly sessionId: string,
    hooks: HookPort | undefined,
    private readonly record?: HookEffects,
  ) {
    this.hooks = hooks && record ? this.compared(hooks, record) : hooks;
  }

  /** The port with the tree compared around each notify and admit hook that applies. */
  private compared(port: HookPort, record: HookEffects): HookPort {
    const around = <T>(
      kind: "notify" | "admit",
      point: HookPoint,
      context: HookCallContext,
      run: () => Promise<T>,
    ) =>
      this.journal === undefined || port.has?.(kind, point, context.tool) === false
        ? run()
        : record.effects.recordAround("hook", `hook:${point}:${context.callId}`, this.journal, run);
    return {
      notify: (point, context) => around("notify", point, context, () => port.notify(point, context)),
      admit: (point, context) => around("admit", point, context, () => port.admit(point, context)),
      wrap: (context, execute) => port.wrap(context, execute),
      ...(port.has ? { has: port.has.bind(port) } : {}),
    };
  }

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
    const journaling: Recorder = {
      record: (events) => recorder.record(withHooks(events)),
      defer: (events) => deferRecord(recorder, withHooks(events)),
    };
    const nextSeq = this.record?.nextSeq;
    if (nextSeq) this.journal = { record: (events) => journaling.record(events), nextSeq };
    return journaling;
  }

  /** Hook records not yet written (the engine journals what is left after a reply's calls). */
  drain(): HookRecord[] {
    const all = this.pending;
    this.pending = [];
    return all;
  }
}
