/**
 * `harness/engine`: the low-level parts the session layer (`harness`) is built from, for a caller
 * that assembles a run itself: the Engine and its options, the tool runtime and registry, the
 * built-in tools, the stream decoders, journal keys, trust and the PostgreSQL journal. The seams
 * and their stock implementations are exported by `harness`.
 *
 *   const registry = new ToolRegistry();
 *   for (const tool of createFileTools()) registry.register(tool);
 *   const engine = new Engine({ sessionId, store, provider, runtime: { snapshot: registry.snapshot(), ... }, ... });
 *   const summary = await engine.run();
 */
export * from "./engine/acceptance.js";
export * from "./engine/engine.js";
export * from "./engine/errors.js";
export { DEFAULT_LIMITS, type EngineOptions } from "./engine/options.js";
export { type ProcessSupervision, type SpawnInfo, SpawnJournal } from "./engine/recovery.js";
export { SessionState } from "./engine/state.js";
export { SYSTEM_PROMPT } from "./engine/system-prompt.js";
export { JournalKey } from "./journal/key.js";
export { journalKeyPath, loadJournalKey } from "./journal/key-file.js";
export { acquireLease, expiredLeases, type Lease, type LeaseHolder, leaseOf } from "./journal/pg/lease.js";
export { leasedStore } from "./journal/pg/leased.js";
export { ensurePgSchema } from "./journal/pg/schema.js";
export { type PgJournalOptions, PgJournalStore, type PgOpenWriterOptions } from "./journal/pg/store.js";
export { adoptCommand, assessTrust, type JournalReading, type JournalTrust } from "./journal/trust.js";
export {
  type AnyNewEvent,
  EVENT_SCHEMAS,
  EVENT_TYPES,
  event,
  GENESIS_HASH,
  isEventType,
  JOURNAL_FORMAT_VERSION,
  type NewEvent,
} from "./journal/vocabulary.js";
export { TtyApprover } from "./policy/tty-approver.js";
export { decodeStream, ProtocolError, StreamDecoder } from "./protocol/decoder.js";
export {
  NORMAL_STOP_REASONS,
  type Reasoning,
  type RefusedArguments,
  type Reply,
  type StopReason,
  type StreamEvent,
  TOOL_STATUSES,
  type ToolSpec,
  type ToolStatus,
  type Usage,
} from "./protocol/types.js";
export { modelNameOf } from "./providers/provider.js";
export type { RetryLimits, RuntimeEnvironment } from "./runtime/environment.js";
export { ADMIT_POINTS, WRAP_POINT } from "./runtime/hook-points.js";
export { ToolRuntime } from "./runtime/pipeline.js";
export {
  type DecidedPart,
  deferRecord,
  type HistoryEntry,
  type ProgressListener,
  type ProposalPort,
  type ProposalRecord,
  type Recorder,
} from "./runtime/ports.js";
export { ToolRegistry, ToolSnapshot } from "./runtime/registry.js";
export { Executor } from "./sandbox/executor.js";
export type { SandboxView } from "./sandbox/sandbox.js";
export { escapeForTerminal, escapeLines } from "./shared/terminal-text.js";
export { createFileTools } from "./tools/builtin.js";
export { createToolContext, type ToolContextParts } from "./tools/context.js";
export { ERROR_CODES } from "./tools/errors.js";
export { selectTools, TOOL_PROFILES } from "./tools/profiles.js";
export { createShellTool } from "./tools/shell/shell.js";
export { chunkSize, chunksOf, READ_CHUNK_BYTES, RESERVED_DIR } from "./workspace/fs.js";
