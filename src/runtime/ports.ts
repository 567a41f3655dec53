import type { AnyNewEvent, EventData } from "../journal/vocabulary.js";
import type { ToolStatus } from "../protocol/types.js";
import type { JsonObject } from "../shared/json.js";
import type { ApprovalDisplay, EffectClass } from "../tools/tool.js";
import type { WorkspaceFs } from "../workspace/fs.js";
import type { HookKind, HookPoint, WrapPoint } from "./hook-points.js";

/*
 * The runtime's seams. Each concept the runtime shares with what sits above it (policy,
 * approvers, grants, hooks, proposals) is defined here once; the implementations (src/policy,
 * src/proposals) implement these interfaces directly, with these types.
 */

/** Durable recording, supplied by the engine (the only writer of the journal). */
export interface Recorder {
  /**
   * Append events durably (one fsync for the batch, carrying whatever was deferred before it)
   * before resolving. `record([])` makes everything deferred durable.
   */
  record(events: AnyNewEvent[]): Promise<void>;
  /**
   * Append events that may wait for the next durable append (docs/architecture.md, "What may
   * wait for the next fsync"). Only for records no side effect depends on; without it, `record`.
   */
  defer?(events: AnyNewEvent[]): Promise<void>;
}

/** Append events that may wait for the next durable append, durably where the recorder cannot defer. */
export function deferRecord(recorder: Recorder, events: AnyNewEvent[]): Promise<void> {
  return recorder.defer ? recorder.defer(events) : recorder.record(events);
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

/**
 * Which argument a tool's permission rules match. `path`: a workspace path (glob match);
 * `command`: a shell command line (`*` wildcard match); `none`: patterns never match, only a
 * bare tool rule does.
 */
export type SubjectKind = "path" | "command" | "none";

/** The part of a call that rules, session grants and approval prompts talk about. */
export interface Subject {
  kind: SubjectKind;
  /**
   * The path ("." when the tool takes an optional path and none was given), the command; for
   * kind none "" while deciding, and the canonical JSON of the arguments in a grant.
   */
  value: string;
}

export interface PermissionRequest {
  tool: string;
  effect: EffectClass;
  arguments: JsonObject;
  /** Settled calls of this session, oldest first (results committed so far). */
  history?: readonly HistoryEntry[];
  /**
   * The path subject is already canonical (no symlink in it): rules decide it as written, without
   * resolving it. Only for a caller whose read then refuses the file unless it is exactly at that
   * path (grep's matcher confirms each open through /proc), so no link can stand in for it.
   */
  canonicalSubject?: true;
}

export interface PermissionDecision {
  decision: PermissionVerdict;
  /** The rule that decided, e.g. `deny edit_file(**\/*.lock)`, or "default". */
  rule?: string;
  /** Where that rule came from: "default", "cli", a config file label. */
  source: string;
  reason: string;
  /**
   * What the decision was about (the path or command its rules matched). A session grant from
   * an approval of this call covers exactly this subject; absent, exactly these arguments.
   */
  subject?: Subject;
  /** For a command line: each simple command it runs, decided on its own (a grant may cover each). */
  parts?: readonly DecidedPart[];
  /**
   * A command pattern (`npm test*`) an approval for the session may add instead of the exact
   * subject: offered only for a line that is one simple command a session grant may cover.
   */
  pattern?: string;
}

/** One simple command of a shell line, as the policy decided it. */
export interface DecidedPart {
  /** The command as rules match it (normalized, wrappers seen through). */
  command: string;
  decision: PermissionVerdict;
  /**
   * Whether a session grant of a command pattern may allow this part: it asks only because of
   * the rules and defaults on its own text (never because of a wrapper's rule or what the parser
   * could not see).
   */
  grantable: boolean;
}

/**
 * The policy seam: decides allow / ask / deny / propose for a validated call. It may look at
 * what the call touches (e.g. where a symlink leads), so it may answer asynchronously.
 */
export interface PermissionPort {
  decide(request: PermissionRequest): PermissionDecision | Promise<PermissionDecision>;
  /**
   * Whether every call of `tool` is denied whatever its arguments (a `deny` rule naming the tool
   * with no pattern). Such a tool is not discoverable when tools are deferred; calls are still
   * decided by `decide`. Absent: no tool is known to be denied outright.
   */
  deniesOutright?(tool: string): boolean;
}

/** One `ask`: everything a person needs to decide about exactly this call. */
export interface ApprovalRequest {
  callId: string;
  tool: string;
  /** The arguments the call will run with. */
  arguments: JsonObject;
  effect: EffectClass;
  /** SHA-256 of the canonical {tool, arguments}: a decision binds to exactly this call. */
  callHash: string;
  /** What a session grant from this request would cover. */
  subject: Subject;
  /** Why the policy asked (the deciding rule or default). */
  reason?: string;
  /** Facts the tool wants shown besides the arguments (command, cwd, timeout, sandbox...). */
  display?: ApprovalDisplay;
  /**
   * The command pattern a session approval may grant instead of the exact subject (`npm test*`).
   * An answer naming any other pattern is taken as the exact subject.
   */
  pattern?: string;
}

/** An approver's answer, as `approval.decided` records it. */
export type ApprovalDecision = Omit<EventData<"approval.decided">, "call_id" | "call_hash">;

export type ApprovalScope = ApprovalDecision["scope"];

/**
 * The approver seam: asked when policy says `ask`. Anything but an explicit yes denies;
 * implementations resolve (deny) rather than reject on failure.
 */
export interface ApprovalPort {
  request(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision>;
}

/**
 * A session-scoped approval: later calls of the same tool with exactly the same subject (the
 * path or command shown; for tools without one, exactly the same arguments) run without asking.
 */
export interface SessionGrant {
  tool: string;
  subject: Subject;
  /**
   * A command pattern (`npm test*`): the grant covers each simple command of a later line that
   * it matches and that the policy let a grant cover (`DecidedPart.grantable`), instead of
   * exactly `subject`.
   */
  pattern?: string;
}

/** Approvals granted "for this session", keyed by tool + subject. */
export interface GrantPort {
  /**
   * Whether the session's grants cover a call: one granted for exactly this subject, or, for a
   * command line decided per part (`parts`), every part that asks matched by a pattern grant.
   */
  covers(grant: SessionGrant, parts?: readonly DecidedPart[]): boolean;
  add(grant: SessionGrant): void;
}

/**
 * What a hook sees of a call: its identity, arguments and effect, and from `after_execute` on
 * the result's status. Hooks never see the result's content or error details: they decide
 * about calls, and a result reaches the model only through the runtime.
 */
export interface HookCallContext {
  readonly session: string;
  readonly callId: string;
  readonly tool: string;
  readonly arguments: Readonly<JsonObject>;
  /** "unknown" before lookup succeeded (e.g. before_validate of an unknown tool). */
  readonly effect: EffectClass | "unknown";
  /** after_execute, on_error, before_project, after_project: the result status. */
  readonly status?: ToolStatus;
}

/** What a hook function receives: the call at one point, as a deep-frozen copy. */
export interface HookContext extends HookCallContext {
  readonly point: HookPoint | WrapPoint;
}

/** One hook decision, exactly as the journal records it (`hook.decided`). */
export type HookRecord = EventData<"hook.decided">;

export interface AdmitOutcome {
  allowed: boolean;
  /** The denying hook and its reason, when denied. */
  hook?: string;
  reason?: string;
  records: HookRecord[];
}

export type WrapOutcome<T> =
  /** Execution ran and every wrap hook passed its result through. */
  | { status: "ok"; value: T; records: HookRecord[] }
  /** Execution itself failed and the error was passed through unchanged. */
  | { status: "threw"; error: unknown; records: HookRecord[] }
  /**
   * A wrap hook broke the contract. Whatever it returned is discarded. `executed` says whether
   * the handler ran; when it did, `execution` holds its real outcome for the trace.
   */
  | {
      status: "violation";
      code: "HOOK_VIOLATION";
      hook: string;
      message: string;
      executed: boolean;
      execution?: { ok: true; value: T } | { ok: false; error: unknown };
      records: HookRecord[];
    };

/** The hook seam. Hooks observe, admit, or wrap; none can widen a decision or forge a result. */
export interface HookPort {
  /** Observers; never vetoes. */
  notify(point: HookPoint, context: HookCallContext): Promise<HookRecord[]>;
  /** Admit hooks in order; the first deny stops. */
  admit(point: HookPoint, context: HookCallContext): Promise<AdmitOutcome>;
  /** Run `execute` inside the wrap hooks, at most once. */
  wrap<T>(context: HookCallContext, execute: () => Promise<T>): Promise<WrapOutcome<T>>;
  /** Whether any hook of this kind applies at this point to this tool (absent: assume one may). */
  has?(kind: HookKind, point: HookPoint, tool: string): boolean;
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
  /**
   * Text a running call produced (a shell command's output), as it arrives, batched by the tool.
   * Transient: for a live view only; the call's result holds what is kept.
   */
  toolOutput?(callId: string, text: string): void;
  /**
   * The W3C `traceparent` of a call's span, when a live OpenTelemetry export is on (a call that
   * reaches another process, an MCP server's, continues the session's trace there).
   */
  traceparent?(callId: string): string | undefined;
}

/** A proposed file change: recorded in the journal (with its call), applied later by `harness apply`. */
export type ProposalRecord = Omit<EventData<"proposal.recorded">, "call_id">;

/** Propose mode: writes of a proposing call are captured instead of performed. */
export interface ProposalPort {
  begin(callId: string): { fs: WorkspaceFs; finish(): ProposalRecord[] };
}
