import type { JournalStore } from "../journal/store.js";
import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import type { ImageMediaType, StreamEvent } from "../protocol/types.js";
import type { ModelPrices } from "../providers/config.js";
import type { Provider } from "../providers/provider.js";
import type { RuntimeEnvironment } from "../runtime/environment.js";
import type { PermissionPort, ProgressListener, ProposalPort, ProposalRecord } from "../runtime/ports.js";
import type { JsonObject } from "../shared/json.js";
import type { AcceptanceCheck } from "./acceptance.js";
import type { SessionEnvironment, StartInstructions } from "./instructions.js";
import type { ProviderAdvice } from "./provider-advice.js";
import type { EngineQuota } from "./quota-port.js";
import type { ProcessSupervision } from "./recovery.js";
import type { SessionState } from "./state.js";
import type { DeferSettings } from "./tool-offer.js";
import type { ToolSurfaceSource } from "./tool-surface.js";

export type RunStatus =
  | "verified"
  | "unverified"
  | "stopped"
  | "review_required"
  | "needs_review"
  | "cancelled"
  /** The user interrupted the turn (Engine.interrupt): the session stays open for the next input. */
  | "interrupted";

export interface RunSummary {
  status: RunStatus;
  reason: string | null;
  message: string | null;
  session: string;
  events: number;
  model_requests: number;
  tool_calls: number;
  answer: string | null;
  usage: SessionState["usage"];
  /** The window requests were held to, and the largest request: estimated before sending, reported after (null: none). */
  tokens: {
    context_window: number;
    peak_estimated_input_tokens: number | null;
    peak_reported_input_tokens: number | null;
  };
  /**
   * A `changes_denied` stop, or an `acceptance_failed` one after denied changes: the flags that
   * would allow what was denied, each a flag and its value (`["--write", "allow"]`), as recorded
   * in its `run.stopped` (absent in older journals).
   */
  allow?: string[][];
  /**
   * What the session's sub-agents spent (their own sub-agents included), when it started any:
   * not part of `model_requests`, `tool_calls` and `usage`, which are the session's own.
   */
  agents_usage?: SessionState["agentUsage"];
  /** With a goal loop: how many times the acceptance checks ran in this turn. */
  attempts?: number;
  /** Only from a compaction asked for by the user (compactOnly): what context.compacted recorded. */
  compacted?: { replaced_messages: number; tokens_before: number; tokens_after: number };
  /** Only from a userCommand: the call's result as journaled (its content is the scrubbed output). */
  command?: { call_id: string; status: string; summary: string; content: string; duration_ms: number };
}

export interface GoalLoop {
  attempts: number;
  noProgress: number;
}

/** Budgets are per turn: each turn of a session may use them afresh (a session with one turn: per session). */
export interface Limits {
  maxModelRequests: number;
  maxToolCalls: number;
  /** Model attempts per step for retryable provider errors. */
  maxModelAttempts: number;
  modelRetryBaseMs: number;
  modelRetryMaxMs: number;
  previewLimitBytes: number;
  poolSize: number;
  /**
   * Tokens the model takes in one request (default: the table in providers/context-window.ts
   * for the provider's model). No request is sent whose estimate exceeds window - reserve.
   */
  contextWindowTokens?: number;
  /** Tokens kept free for the reply (default: a quarter of the window, at most 8K). */
  replyReserveTokens?: number;
  /** Longest total time to spend waiting between retries of one model step. */
  modelRetryMaxTotalMs: number;
}

export const DEFAULT_LIMITS: Limits = {
  maxModelRequests: 50,
  maxToolCalls: 200,
  maxModelAttempts: 4,
  modelRetryBaseMs: 500,
  modelRetryMaxMs: 20_000,
  previewLimitBytes: 40 * 1024,
  poolSize: 8,
  modelRetryMaxTotalMs: 120_000,
};

export interface PolicyHandle {
  /** JSON description recorded in session.started. */
  describe: JsonObject;
  digest: string;
  permissions: PermissionPort;
}

export interface MoneyBudget {
  maxCostUsd: number;
  prices: ModelPrices;
}

/** Live observation of a run (for the CLI's stderr progress and `--events`). */
export interface EngineListener extends ProgressListener {
  record?(record: AnyRecord): void;
  stream?(event: StreamEvent): void;
  /**
   * A record of a sub-agent's journal, as it is written: `path` is its label below this session
   * (`a/b` for a grandchild). Not this session's record: it is in the child's journal.
   */
  agentRecord?(path: string, record: AnyRecord): void;
  /**
   * The W3C traceparent of a sub-agent's call (`path` as in agentRecord), when a live OpenTelemetry
   * export is on: what that call hands on to the processes and servers it reaches.
   */
  agentTraceparent?(path: string, callId: string): string | undefined;
}

export interface EngineOptions {
  sessionId: string;
  store: JournalStore;
  provider: Provider;
  /** What tool calls run in: tools, workspace, approver, grants, hooks, time limits. */
  runtime: RuntimeEnvironment;
  workspace: { name: string; fingerprint: string };
  /** Required for a new session; when resuming, it must equal the recorded goal if given. */
  goal?: string;
  /**
   * The user's input that starts the next turn of an existing session (mode "resume" or "auto"):
   * journaled as `user.input` and sent after everything the session holds. For a session that
   * does not exist yet (mode "new"/"auto") without a goal, it is the goal.
   */
  input?: string;
  /**
   * What comes with this turn's input (the goal's, or `input`'s): images (stored as artifacts,
   * referenced by digest in `user.input`) and the command template the text was expanded from
   * (journaled as `command.expanded` just before it).
   */
  attachments?: TurnAttachments;
  policy: PolicyHandle;
  acceptance: readonly AcceptanceCheck[];
  /**
   * The goal loop: when the acceptance checks fail, their failures are the model's next input and
   * the session goes on, up to `attempts` evaluations in all; it stops early after `noProgress`
   * consecutive attempts that improved on none before them.
   */
  goalLoop?: GoalLoop;
  /** Propose mode: builds the overlay proposing calls write to, from the session's proposals. */
  proposals?(existing: readonly ProposalRecord[]): ProposalPort;
  /** Process-running tools: where spawns are journaled, and how survivors are killed on resume. */
  processes?: ProcessSupervision;
  limits?: Partial<Limits>;
  signal?: AbortSignal;
  listener?: EngineListener;
  /**
   * A money budget (`--max-cost-usd`), all turns of the session together: no model request is
   * sent whose projected cost exceeds what is left (engine/money-budget.ts).
   */
  moneyBudget?: MoneyBudget;
  /**
   * A quota shared with other sessions (a fleet queue's): each model request reserves against
   * it before it is sent, and a refusal stops the run as an exhausted budget would.
   */
  quota?: EngineQuota;
  /** How the run was set up (recorded in session.started for resume; no secrets, no host paths). */
  setup?: JsonObject;
  /** `new`: the session must not exist; `resume`: it must; `auto`: either. */
  mode: "new" | "resume" | "auto";
  /**
   * Compact the stopped session now instead of continuing it (harness compact): one summary
   * request, journaled as automatic compaction is, then return. Requires mode "resume".
   */
  compactOnly?: { instructions?: string };
  /**
   * Run the person's own shell command in the stopped session instead of continuing it (the
   * chat's `!command`): journaled as `user.command`, then the `shell` call `user:N` through the
   * same policy, sandbox and recording as the model's calls (the person typing it is their answer
   * to an `ask`; a deny rule still denies). Its result is not sent to the model. Requires mode "resume".
   */
  userCommand?: { command: string; share: boolean };
  harnessVersion: string;
  /** What to tell the user when a model request fails for good (default: general advice per code). */
  providerAdvice?: ProviderAdvice;
  systemPrompt?: string;
  /**
   * Project instructions: the user's file (read by the embedder) and whether to read the
   * workspace root's AGENTS.md. Without it a session records and pins none (nor nested ones).
   */
  instructions?: StartInstructions;
  /** The environment stated to the model in a new session (recorded in `session.started`). */
  environment?: SessionEnvironment;
  /**
   * Deferred tools (tool-offer.ts): over the threshold, the model is offered the always-loaded
   * tools and `tool_search`, and tools are loaded on demand. Absent: every tool is offered.
   */
  deferTools?: DeferSettings;
  /** Where a changing tool surface comes from (MCP servers); refreshed at each step boundary. */
  toolSurface?: ToolSurfaceSource;
  /**
   * On resume, a tool surface that differs from the one the session last recorded is accepted
   * (journaled as `tools.changed`, reason "resume") instead of refused.
   */
  acceptToolChanges?: boolean;
  /**
   * On resume, `provider` differs from the model source the session last recorded on purpose (the
   * chat's /model): journaled as `model.switched` (with `setup` as the options that rebuild it)
   * instead of refused. Without it a different provider is an identity mismatch.
   */
  switchModel?: boolean;
  /**
   * Without acceptance checks, a run whose every attempted change was denied stops (denied-changes.ts)
   * instead of ending unverified; with them, a failed check after denied changes names the CLI flags
   * that would have allowed those (`allow`). For embedders whose flags those are (the CLI).
   */
  changesDeniedStops?: boolean;
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  random?(): number;
}

/** An image attached to a turn's input, checked against the image limits by whoever read it. */
export interface InputImage {
  bytes: Uint8Array;
  media_type: ImageMediaType;
  width: number;
  height: number;
}

export interface TurnAttachments {
  images?: readonly InputImage[];
  command?: EventData<"command.expanded">;
}
