// The library surface: the engine, the runtime, and every seam with its implementations.

export { FileArtifactStore } from "./artifacts/file-store.js";
export { MemoryArtifactStore } from "./artifacts/memory-store.js";
export type { ArtifactRef, ArtifactSink, ArtifactStore } from "./artifacts/store.js";
export * from "./engine/acceptance.js";
export * from "./engine/engine.js";
export * from "./engine/errors.js";
export { SessionState } from "./engine/state.js";
export { SYSTEM_PROMPT } from "./engine/system-prompt.js";
export { FileJournalBackend } from "./journal/file-store.js";
export { JournalKey } from "./journal/key.js";
export { journalKeyPath, loadJournalKey } from "./journal/key-file.js";
export { MemoryJournalBackend } from "./journal/memory-store.js";
export * from "./journal/store.js";
export { adoptCommand, assessTrust, type JournalReading, type JournalTrust } from "./journal/trust.js";
export * from "./journal/vocabulary.js";
export { type Approver, DenyApprover, FunctionApprover } from "./policy/approver.js";
export { HookRunner } from "./policy/hooks.js";
export {
  ApproverPort,
  HookRunnerPort,
  modePolicy,
  PolicyPermissionPort,
  SessionGrantPort,
} from "./policy/ports.js";
export { TtyApprover } from "./policy/tty-approver.js";
export { decodeStream, ProtocolError, StreamDecoder } from "./protocol/decoder.js";
export * from "./protocol/types.js";
export { createProvider } from "./providers/config.js";
export * from "./providers/provider.js";
export { ScriptedProvider } from "./providers/scripted/provider.js";
export { ToolRuntime } from "./runtime/pipeline.js";
export * from "./runtime/ports.js";
export { ToolRegistry, ToolSnapshot } from "./runtime/registry.js";
export type { ToolResult } from "./runtime/result.js";
export { createSandbox } from "./sandbox/create.js";
export { Executor } from "./sandbox/executor.js";
export { type Sandbox, SandboxUnavailableError } from "./sandbox/sandbox.js";
export { escapeForTerminal, escapeLines } from "./shared/terminal-text.js";
export { createFileTools } from "./tools/builtin.js";
export { ERROR_CODES, ToolError } from "./tools/errors.js";
export { selectTools, TOOL_PROFILES } from "./tools/profiles.js";
export { createShellTool } from "./tools/shell/shell.js";
export * from "./tools/tool.js";
export { DiskWorkspaceFs } from "./workspace/disk-fs.js";
export * from "./workspace/fs.js";
export { MemoryWorkspaceFs } from "./workspace/memory-fs.js";
