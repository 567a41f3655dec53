import type { AnyNewEvent, EventData } from "../journal/vocabulary.js";
import type { ToolStatus } from "../protocol/types.js";
import type { JsonObject } from "../shared/json.js";
import type { EffectClass } from "../tools/tool.js";
import type { WorkspaceFs } from "../workspace/fs.js";

/** Durable recording, supplied by the engine (the only writer of the journal). */
export interface Recorder {
  /** Append events durably (one fsync for the batch) before resolving. */
  record(events: AnyNewEvent[]): Promise<void>;
}

/** `propose`: run the call against a proposal overlay; nothing in the workspace changes. */
export type PermissionVerdict = "allow" | "ask" | "deny" | "propose";

/** A settled earlier call of this session, for policies that depend on what was observed. */
export interface HistoryEntry {
  call_id: string;
  name: string;
  arguments: JsonObject;
  status: ToolStatus;
  data?: JsonObject;
  /** The id of the artifact that holds this result's whole content, when it was too large. */
  artifact?: string;
}

export interface PermissionRequest {
  tool: string;
  effect: EffectClass;
  arguments: JsonObject;
  /** Settled calls of this session, oldest first (results committed so far). */
  history?: readonly HistoryEntry[];
}

export interface PermissionDecision {
  decision: PermissionVerdict;
  /** The rule that decided, e.g. `deny edit_file(**\/*.lock)`, or "default". */
  rule?: string;
  /** Where that rule came from: "default", "cli", a config file label. */
  source: string;
  reason: string;
}

/**
 * The policy seam: decides allow / ask / deny for a validated call. It may look at what the
 * call touches (e.g. where a symlink leads), so it may answer asynchronously.
 */
export interface PermissionPort {
  decide(request: PermissionRequest): PermissionDecision | Promise<PermissionDecision>;
}

export interface ApprovalRequest {
  callId: string;
  tool: string;
  effect: EffectClass;
  arguments: JsonObject;
  /** SHA-256 of the canonical {tool, arguments}: a decision binds to exactly this call. */
  callHash: string;
  display: Record<string, string>;
}

export interface ApprovalDecision {
  decision: "allow" | "deny";
  scope: "once" | "session";
  by: string;
  reason?: string;
}

/** The approver seam: asked when policy says `ask`. Anything but an explicit yes denies. */
export interface ApprovalPort {
  request(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision>;
}

export type HookPoint =
  | "before_validate"
  | "after_validate"
  | "before_permission"
  | "before_execute"
  | "after_execute"
  | "on_error"
  | "before_project"
  | "after_project";

export interface HookCallContext {
  point: HookPoint;
  session: string;
  call_id: string;
  tool: string;
  arguments: JsonObject;
  effect: EffectClass | "unknown";
  status?: ToolStatus;
}

/** One hook decision, exactly as the journal records it (`hook.decided`). */
export type HookRecord = EventData<"hook.decided">;

/** The hook seam. Hooks observe, admit, or wrap; none can widen a decision or forge a result. */
export interface HookPort {
  notify(point: HookPoint, context: HookCallContext): Promise<HookRecord[]>;
  admit(
    point: HookPoint,
    context: HookCallContext,
  ): Promise<{ allowed: boolean; reason?: string; records: HookRecord[] }>;
  /**
   * Run `next` inside the wrap hooks. `violation` is set when a hook did not call next or
   * returned something it did not get from next; the runtime then discards the value.
   */
  wrap<T>(
    context: HookCallContext,
    next: () => Promise<T>,
  ): Promise<{ value: T | undefined; executed: boolean; violation?: string; records: HookRecord[] }>;
}

/** Live progress for humans (stderr) and `--events`; not the durable record. */
export interface ProgressListener {
  callFinished?(info: {
    call_id: string;
    name: string;
    status: ToolStatus;
    duration_ms: number;
    summary: string;
  }): void;
}

/** Approvals granted "for this session": exact tool + argument subject. */
export interface GrantPort {
  covers(request: ApprovalRequest): boolean;
  add(request: ApprovalRequest): void;
}

/** A proposed file change: recorded in the journal, applied later by `harness apply`. */
export interface ProposalRecord {
  proposal_id: string;
  path: string;
  base_version: string | null;
  content: string;
  content_sha256: string;
  diff: string;
}

/** Propose mode: writes of a proposing call are captured instead of performed. */
export interface ProposalPort {
  begin(callId: string): { fs: WorkspaceFs; finish(): ProposalRecord[] };
}
