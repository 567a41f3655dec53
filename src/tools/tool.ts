import type { z } from "zod";
import type { ArtifactStore } from "../artifacts/store.js";
import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import type { JsonObject } from "../shared/json.js";
import type { WorkspaceFs } from "../workspace/fs.js";
import type { ChangeSet } from "../workspace/manifest.js";

export type EffectClass =
  | "pure"
  | "read_only"
  | "local_write"
  | "process_execution"
  | "network_read"
  | "network_write"
  | "external_side_effect"
  | "destructive";

export type Idempotency = "pure" | "idempotent" | "conditionally_idempotent" | "non_idempotent";

/**
 * What a call touches, derived from its arguments. Resources are opaque strings
 * (e.g. "file:src/a.ts"). `exclusive` means unknown: the call conflicts with everything.
 */
export type ResourceSet = { read: string[]; write: string[] } | { exclusive: true };

/**
 * What the policy says about reading a workspace file with read_file: `allowed` (a rule, the
 * default, or a session grant the user already gave), `ask` (only a person could allow it, and
 * nobody has yet), or `denied`.
 */
export type ReadAccess = "allowed" | "ask" | "denied";

export interface ReadAccessOptions {
  /**
   * The caller listed the path without following links (no symlink in it) and will read it only
   * where the opened file is confirmed to be exactly at that path: the policy decides the path as
   * written instead of resolving it (a realpath per file, most of the check on a large tree).
   */
  canonical?: boolean;
}

/** What a handler may use. Tools never see the engine or the journal. */
export interface ToolContext {
  readonly callId: string;
  readonly signal: AbortSignal;
  readonly fs: WorkspaceFs;
  /** The version this session last observed (read or wrote) of a canonical path, if any. */
  observedVersion(canonicalPath: string): string | undefined;
  /** Large stored results of this session. */
  readonly artifacts: ArtifactStore;
  /**
   * Absolute host path of the workspace root when the workspace is a real directory.
   * Only process-running tools need it; file tools must go through `fs`.
   */
  readonly hostRoot?: string;
  /**
   * Whether the policy lets read_file read this workspace path. Tools that reveal file content
   * or names by other means (search, listings, stored results) ask it per file, without
   * prompting anyone. Absent means no policy governs the call (everything readable).
   */
  readAccess?(path: string, options?: ReadAccessOptions): Promise<ReadAccess>;
  /** The workspace files whose content an artifact of this session holds (canonical paths). */
  artifactSources?(id: string): readonly string[];
  /**
   * A file tool reports what its write did to the workspace (its before-content already in
   * `artifacts`); the runtime journals it with the result. Absent when nothing records effects.
   */
  workspaceChanged?(change: ChangeSet): void;
  /**
   * Someone is watching the call live (a chat, `--events`): text a running call produces, e.g. a
   * shell command's output, as it arrives. Transient: never the result, never journaled.
   * Absent when nobody watches.
   */
  output?(text: string): void;
  /**
   * The W3C `traceparent` of this call's span, when a live OpenTelemetry export is on; absent or
   * undefined otherwise. Read when the call reaches out (the span exists once tool.started was seen).
   */
  traceparent?(): string | undefined;
  /**
   * For the one tool that starts child sessions (`agent`): records its session must hold before
   * it goes on, and what the turn may still spend. Absent for every other tool.
   */
  readonly delegation?: DelegationPort;
  /**
   * For the one tool that runs programs calling other tools (`batch`): each nested call goes
   * through the session's whole pipeline as a call of its own. Absent for every other tool.
   */
  readonly subCalls?: SubCallPort;
  /** For `tool_search` only: the session's discoverable catalog of deferred tools. */
  readonly catalog?: CatalogPort;
}

/** What a program's call gave back: plain JSON, never a host object. */
export interface SubCallOutcome {
  call_id: string;
  name: string;
  status: string;
  error_type?: string;
  summary: string;
  /** The result's content as the model would read it (the preview, when an artifact holds the rest). */
  content: string;
  data?: JsonObject;
  artifact?: { id: string; bytes: number };
}

/**
 * Nested calls of a call (`batch`): each runs through validation, authorization, scheduling and
 * the journal as a call of its own whose id is `PREFIX/N`, journaled with `parent_call_id`.
 * Only read-only tools run; any other is answered BATCH_TOOL_FORBIDDEN (journaled, never run).
 */
export interface SubCallPort {
  /** `CALL` for the call's own run, `CALL/rK` for its K-th re-run after a crash. */
  readonly prefix: string;
  /** Whether a program may call the tool (`unknown`: this session offers no such tool). */
  callable(name: string): "allowed" | "forbidden" | "unknown";
  /** Run one nested call, id `PREFIX/N`; resolves with its committed result, never rejects. */
  call(
    request: { id: string; name: string; arguments: unknown },
    signal: AbortSignal,
  ): Promise<SubCallOutcome>;
}

/** One tool as `tool_search` reports it: its name and the first line of its description. */
export interface CatalogMatch {
  name: string;
  description: string;
}

/**
 * What `tool_search` may do in the session running it: rank the deferred tools this session may
 * discover (never one its policy denies outright) and load the matches' definitions, journaled
 * (`tools.loaded`) before `search` resolves, offered to the model from its next request. Loading
 * grants nothing: every call is still authorized when it is made.
 */
export interface CatalogPort {
  search(query: string, limit: number, callId: string): Promise<{ tools: CatalogMatch[]; loaded: string[] }>;
}

/** The `agent.*` records a delegating tool writes into its own session's journal. */
export type DelegationEvent = {
  [T in DelegationEventType]: { type: T; data: EventData<T> };
}[DelegationEventType];
export type DelegationEventType =
  | "agent.started"
  | "agent.approval"
  | "agent.merge"
  | "agent.finished"
  /** A `merge: propose` child's changes, as this session's proposals (`harness diff` / `apply`). */
  | "proposal.recorded";

/**
 * What a delegating tool may do in the session running it. It never sees the journal itself:
 * only these records go in, appended durably before `record` resolves.
 */
export interface DelegationPort {
  record(event: DelegationEvent): Promise<void>;
  /** What this turn may still spend (finished children's spend counted as the session's own). */
  remaining(): {
    model_requests: number;
    tool_calls: number;
    /** What is left of the session's money budget (`--max-cost-usd`), when it has one. */
    cost_usd?: number;
  };
  /** Children this session has journaled as started. */
  children(): number;
  /** What this session journaled of its child labelled `label`, if it started one. */
  recorded(label: string): RecordedAgent | undefined;
  /**
   * Journal what a merge just wrote into this workspace as the call's change, durably, now (not
   * with the result): a crash after it cannot leave the files written and the record silent.
   */
  changed(callId: string, change: ChangeSet): Promise<void>;
  /** The paths this session's journal already records the call `callId` as having changed. */
  changedPaths(callId: string): ReadonlySet<string>;
  /**
   * A record a child (`agentPath` = its label, `a/b` for a grandchild) just wrote to its own
   * journal, for whoever watches this session live; never journaled here.
   */
  observe?(agentPath: string, record: AnyRecord): void;
  /** The traceparent of a child's call (`agentPath` as in observe), when a live export is on. */
  traceparent?(agentPath: string, callId: string): string | undefined;
}

/** A child as its parent's journal holds it. */
export interface RecordedAgent {
  started: EventData<"agent.started">;
  merge?: EventData<"agent.merge">;
  finished?: EventData<"agent.finished">;
}

/** A successful handler outcome (status ok). Failures are thrown as ToolError. */
export interface ToolOutput {
  /** One line for humans and traces. */
  summary: string;
  /** The text the model reads. */
  content: string;
  /** Structured facts for the journal and derived ledgers (e.g. path, version). */
  data?: JsonObject;
  /**
   * The content came from outside the user's trust (a fetched page, an MCP server the user has
   * not marked trusted): where from, e.g. the URL. The model reads it labelled as data, and
   * until the turn ends anything that would widen what leaves the machine asks a person.
   */
  untrusted?: string;
}

/**
 * A tool is defined once: the Zod schema is both the model-visible JSON Schema and the
 * run-time validator. A tool whose schema someone else wrote (an MCP server's tool) publishes
 * that JSON Schema as `inputSchema`; its `input` must then enforce exactly that schema.
 */
export interface ToolDefinition<Args = unknown> {
  readonly name: string;
  /** Written for the model: what it does, when to use it, what it returns, how it fails. */
  readonly description: string;
  readonly version: string;
  readonly input: z.ZodType<Args>;
  /**
   * The JSON Schema the model is shown when it is not derived from `input`: a foreign tool's
   * own schema (an object schema), which `input` validates against (e.g. with ajv).
   */
  readonly inputSchema?: JsonObject;
  /**
   * A built-in tool's `input` as JSON Schema, converted when harness was built
   * (input-schemas.generated.ts): the registry sends it instead of converting `input` again in
   * every process. test/tools/input-schemas.test.ts fails when it differs from the conversion.
   */
  readonly modelSchema?: JsonObject;
  readonly effect: EffectClass;
  readonly idempotency: Idempotency;
  readonly timeoutMs: number;
  resources(args: Args): ResourceSet;
  concurrencySafe(args: Args): boolean;
  /** Semantic validation after the schema: throw ToolError("SEMANTIC_VALIDATION_ERROR", ...). */
  validate?(args: Args): void;
  execute(args: Args, context: ToolContext): Promise<ToolOutput>;
  /**
   * For tools that can find out what happened to an interrupted call (e.g. an idempotency-key
   * ledger): the real outcome, or undefined when it cannot be told. Used on recovery instead of
   * reporting the outcome as unknown.
   */
  reconcile?(args: Args, context: ToolContext): Promise<ToolOutput | undefined>;
  /** Facts an approver must show besides the arguments (e.g. cwd, timeout, sandbox profile). */
  approvalDetails?(args: Args): ApprovalDisplay;
  /**
   * A tool whose handler is another process that may write the workspace (an MCP server's tool)
   * and that always runs alone: the tree is compared around each call and the difference
   * recorded as this source. Process-running tools (`process_execution`) are compared as `shell`.
   */
  readonly comparedAs?: "mcp";
  /** The tool starts child sessions (`agent`): its context gets the session's DelegationPort. */
  readonly delegates?: true;
  /**
   * The tool runs nested calls (`batch`): its context gets a SubCallPort, and it can never be
   * one of those nested calls itself.
   */
  readonly nests?: true;
  /** The tool searches and loads deferred tools (`tool_search`): its context gets the CatalogPort. */
  readonly catalogs?: true;
}

/** Extra facts an approval prompt shows for a call; all optional. */
export interface ApprovalDisplay {
  command?: string;
  /** Workspace-relative working directory. */
  cwd?: string;
  timeoutMs?: number;
  /** Sandbox profile name, e.g. "bwrap" or "none". */
  sandbox?: string;
  /** Other facts a tool wants shown (label → value). */
  details?: Record<string, string>;
}

// biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of different argument types
export type AnyTool = ToolDefinition<any>;

export function defineTool<Args>(definition: ToolDefinition<Args>): ToolDefinition<Args> {
  return definition;
}
