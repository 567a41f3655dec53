import type { ArtifactStore } from "../artifacts/store.js";
import type { WorkspaceFs } from "../workspace/fs.js";
import type { ChangeSet } from "../workspace/manifest.js";
import type {
  CatalogPort,
  DelegationPort,
  ReadAccess,
  ReadAccessOptions,
  SubCallPort,
  ToolContext,
} from "./tool.js";

/** What a context is built from; everything optional has the default a plain run needs. */
export interface ToolContextParts {
  callId: string;
  fs: WorkspaceFs;
  artifacts: ArtifactStore;
  /** Default: a signal that never fires. */
  signal?: AbortSignal;
  /** Default: nothing observed yet. */
  observedVersion?(canonicalPath: string): string | undefined;
  hostRoot?: string | undefined;
  readAccess?(path: string, options?: ReadAccessOptions): Promise<ReadAccess>;
  artifactSources?(id: string): readonly string[];
  workspaceChanged?(change: ChangeSet): void;
  output?(text: string): void;
  traceparent?(): string | undefined;
  delegation?: DelegationPort;
  subCalls?: SubCallPort;
  catalog?: CatalogPort;
}

/** The one way to build a ToolContext: the runtime, crash recovery, evaluations and tests. */
export function createToolContext(parts: ToolContextParts): ToolContext {
  const {
    hostRoot,
    readAccess,
    artifactSources,
    workspaceChanged,
    output,
    traceparent,
    delegation,
    subCalls,
    catalog,
  } = parts;
  return {
    callId: parts.callId,
    signal: parts.signal ?? new AbortController().signal,
    fs: parts.fs,
    artifacts: parts.artifacts,
    observedVersion: parts.observedVersion ?? (() => undefined),
    ...(hostRoot !== undefined ? { hostRoot } : {}),
    ...(readAccess ? { readAccess } : {}),
    ...(artifactSources ? { artifactSources } : {}),
    ...(workspaceChanged ? { workspaceChanged } : {}),
    ...(output ? { output } : {}),
    ...(traceparent ? { traceparent } : {}),
    ...(delegation ? { delegation } : {}),
    ...(subCalls ? { subCalls } : {}),
    ...(catalog ? { catalog } : {}),
  };
}
