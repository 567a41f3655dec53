/**
 * `harness`: run a coding agent's session from a program, as `harness run` runs one: policy,
 * sandbox, journal and acceptance set up from a `SessionConfig`; nothing is printed (notices go
 * to `listener.notice`). The low-level parts (Engine, ToolRuntime, registry) are `harness/engine`.
 *
 *   const session = await createSession({ write: "allow", accept: ["npm test"] }, { workspace, provider });
 *   const summary = await session.turn("fix the failing test").done;
 *   await session.close();
 *   if (summary.status !== "verified") process.exitCode = 1;
 */

export { FileArtifactStore } from "./artifacts/file-store.js";
export { MemoryArtifactStore } from "./artifacts/memory-store.js";
export {
  ArtifactCorruptError,
  type ArtifactRef,
  type ArtifactSink,
  type ArtifactStore,
} from "./artifacts/store.js";
export type { EngineListener, Limits, PolicyHandle, RunStatus, RunSummary } from "./engine/options.js";
export { FileJournalStore } from "./journal/file-store.js";
export { MemoryJournalStore } from "./journal/memory-store.js";
export {
  type AppendOptions,
  JournalError,
  type JournalErrorCode,
  type JournalStore,
  type JournalWriter,
  type OpenWriterOptions,
  type SessionSummary,
} from "./journal/store.js";
export {
  type JournalFaultCode,
  type VerifyResult,
  verifyJournal,
  verifyJournalBytes,
} from "./journal/verify.js";
export type {
  AnyRecord,
  EventData,
  EventType,
  JournalRecord,
} from "./journal/vocabulary.js";
export { DenyApprover, FunctionApprover } from "./policy/approver.js";
export { SessionGrants } from "./policy/grants.js";
export { HookRunner } from "./policy/hooks.js";
export { modePolicy, PolicyPermissions } from "./policy/policy-permissions.js";
export type { ModelMessage } from "./protocol/types.js";
export { createProvider } from "./providers/config.js";
export {
  type ModelRequest,
  type Provider,
  ProviderError,
  type ProviderErrorCode,
  type ProviderErrorDetails,
  type ProviderIdentity,
} from "./providers/provider.js";
export { ScriptedProvider } from "./providers/scripted/provider.js";
export type { ScriptedTurn, ScriptFunction } from "./providers/scripted/script.js";
export { HOOK_POINTS, type HookKind, type HookPoint, type WrapPoint } from "./runtime/hook-points.js";
export type {
  AdmitOutcome,
  ApprovalDecision,
  ApprovalPort,
  ApprovalRequest,
  ApprovalScope,
  GrantPort,
  HookCallContext,
  HookContext,
  HookPort,
  HookRecord,
  PermissionDecision,
  PermissionPort,
  PermissionRequest,
  PermissionVerdict,
  SessionGrant,
  Subject,
  SubjectKind,
  WrapOutcome,
} from "./runtime/ports.js";
export type { ToolResult } from "./runtime/result.js";
export { createSandbox } from "./sandbox/create.js";
export {
  type Launch,
  type LaunchRequest,
  type Sandbox,
  type SandboxConfig,
  type SandboxProfile,
  SandboxUnavailableError,
  type UnavailableReason,
} from "./sandbox/sandbox.js";
export { parseSessionConfig, type SessionConfig, type SessionLimits } from "./session/config.js";
export {
  createSession,
  openSession,
  type SessionListener,
  type SessionOptions,
} from "./session/create.js";
export type { CommandResult, SessionHandle, Turn } from "./session/handle.js";
export { type SessionRow, sessionRows } from "./session/listing.js";
export type { ModelListing, ProfileRow } from "./session/models.js";
export type { SessionNotice } from "./session/notice.js";
export {
  type AdoptionReport,
  type AdoptionReview,
  adoptSession,
  reviewAdoption,
} from "./session/operations/adopt.js";
export {
  type ApplyReport,
  type ApplyRequest,
  type ApplyStatus,
  applySession,
} from "./session/operations/apply.js";
export { SessionOperationError, type SessionOperationErrorCode } from "./session/operations/error.js";
export { forkWithArtifacts } from "./session/operations/fork.js";
export {
  type ReviewReport,
  type ReviewRequest,
  type ReviewResolution,
  resolveReview,
  type UnknownOutcome,
  unknownOutcomes,
} from "./session/operations/review.js";
export { type LostWorkspaceReport, stopForLostWorkspace } from "./session/operations/stop-lost-workspace.js";
export { undoSession } from "./session/operations/undo.js";
export { type PackSession, packTurn } from "./session/pack.js";
export { UsageError } from "./session/usage-error.js";
export { type OpenedWorkspace, openWorkspace } from "./session/workspace.js";
export { ToolError } from "./tools/errors.js";
export {
  type AnyTool,
  type ApprovalDisplay,
  defineTool,
  type EffectClass,
  type Idempotency,
  type ReadAccess,
  type ResourceSet,
  type ToolContext,
  type ToolDefinition,
  type ToolOutput,
} from "./tools/tool.js";
export type { UndoReport } from "./undo/apply.js";
export type { UndoTarget } from "./undo/plan.js";
export { DiskWorkspaceFs } from "./workspace/disk-fs.js";
export {
  type ChunkOptions,
  type DirEntry,
  type FileStat,
  type GlobOptions,
  WorkspaceError,
  type WorkspaceErrorCode,
  type WorkspaceFs,
  type WriteOptions,
} from "./workspace/fs.js";
export { MemoryWorkspaceFs } from "./workspace/memory-fs.js";
