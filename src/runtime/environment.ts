import type { ArtifactStore } from "../artifacts/store.js";
import type { JsonObject } from "../shared/json.js";
import type { AnyTool, CatalogPort, DelegationPort } from "../tools/tool.js";
import type { WorkspaceFs } from "../workspace/fs.js";
import type {
  ApprovalPort,
  GrantPort,
  HistoryEntry,
  HookPort,
  PermissionPort,
  ProgressListener,
  ProposalPort,
} from "./ports.js";
import type { SnapshotEntry, ToolSnapshot } from "./registry.js";
import type { UntrustedSeen } from "./untrusted.js";
import type { WorkspaceEffects } from "./workspace-effects.js";

/** Runtime-level retries of transient infrastructure failures (pure/idempotent tools only). */
export interface RetryLimits {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryLimits = { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 1000 };
export const DEFAULT_SETTLE_GRACE_MS = 10_000;

/**
 * What tool calls run in: the tools, the workspace, and the people and hooks that may stop a
 * call. Whoever embeds the runtime (the CLI, an evaluation, an example, a test) builds it once;
 * the engine carries it whole and adds only what belongs to a session (see RuntimeOptions).
 */
export interface RuntimeEnvironment {
  snapshot: ToolSnapshot;
  fs: WorkspaceFs;
  /** Absolute host path of the workspace, when it is a real directory (process-running tools). */
  hostRoot?: string;
  artifacts: ArtifactStore;
  approver: ApprovalPort;
  /** Approvals given "for this session" (default: a fresh in-memory set). */
  grants?: GrantPort;
  hooks?: HookPort;
  /** Per-tool time budget (default: the tool's own timeoutMs). */
  timeoutFor?(tool: AnyTool): number;
  /** Extra time a handler gets to settle after its signal fired, before it is abandoned. */
  settleGraceMs?: number;
  retry?: RetryLimits;
  /**
   * One call's own cancellation, from whoever proposed it (an MCP client's
   * notifications/cancelled in harness mcp serve): it stops that call as the run's signal would.
   */
  callSignal?(callId: string): AbortSignal | undefined;
  /**
   * The record of the workspace's effects (a real directory only): file tools report their
   * writes, and every process-running call is compared before and after.
   */
  effects?: WorkspaceEffects;
}

/** The runtime's full configuration: the environment, plus what the session running it owns. */
export interface RuntimeOptions extends Omit<RuntimeEnvironment, "grants" | "settleGraceMs" | "retry"> {
  sessionId: string;
  permissions: PermissionPort;
  grants: GrantPort;
  settleGraceMs: number;
  retry: RetryLimits;
  /** Propose mode: where proposing calls write instead of the workspace. */
  proposals?: ProposalPort;
  observedVersion(canonicalPath: string): string | undefined;
  /** Settled calls of the session so far, for policies that depend on observations. */
  history?(): readonly HistoryEntry[];
  /** Untrusted results the model has seen this turn: widening calls after them ask (untrusted.ts). */
  untrusted?(): readonly UntrustedSeen[];
  previewLimitBytes: number;
  poolSize: number;
  progress?: ProgressListener;
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
  random?(): number;
  /** The seq the session's next journal record gets (names an outside change: `outside:SEQ`). */
  nextSeq?(): number;
  /** What the `agent` tool records in the session and may still spend (see DelegationPort). */
  delegation?: DelegationPort;
  /** What `tool_search` searches and loads from (present while tools are deferred). */
  catalog?: CatalogPort;
  /**
   * A call naming a tool that is not in `snapshot` (what the model is offered) but exists in the
   * session: a refusal (a deferred tool not loaded, a loaded definition gone stale), or the entry
   * to run it with (a tool the policy denies outright: authorization denies it as usual).
   */
  notOffered?(name: string): NotOffered | undefined;
}

/** Why a tool of the session that the model is not offered does not run, or what to decide it by. */
export type NotOffered =
  | { kind: "refuse"; code: "TOOL_NOT_LOADED" | "TOOL_SCHEMA_CHANGED"; message: string; data: JsonObject }
  | { kind: "decide"; entry: SnapshotEntry };
