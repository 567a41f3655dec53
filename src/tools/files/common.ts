import { z } from "zod";
import { normalizeRelativePath, relativeParts } from "../../workspace/boundary.js";
import { WorkspaceError, type WorkspaceErrorCode } from "../../workspace/fs.js";
import { versionOf } from "../../workspace/version.js";
import { type ErrorCode, ToolError } from "../errors.js";
import type { ToolContext, ToolDefinition } from "../tool.js";

/** Every built-in file tool is at this version; bump when a tool's contract changes. */
export const FILE_TOOL_VERSION = "1";

export const PATH_RULES =
  "Workspace-relative POSIX path using '/' (e.g. src/app.ts). Absolute paths, drive letters, '..', " +
  "backslashes, ':', Windows device names (CON, NUL, COM1...), names ending in '.' or ' ', and the " +
  ".harness directory are rejected.";

export const versionField = z
  .string()
  .regex(/^[0-9a-f]{64}$/, "must be 64 lower-case hex digits")
  .describe("Optional: the version (SHA-256 hex) this change is based on, as returned by read_file.");

const WORKSPACE_TO_TOOL_CODE: Record<WorkspaceErrorCode, ErrorCode> = {
  PATH_ESCAPE: "PATH_ESCAPE",
  RESERVED_PATH: "RESERVED_PATH",
  PROTECTED_PATH: "PROTECTED_PATH",
  INVALID_PATH: "INVALID_PATH",
  NOT_FOUND: "NOT_FOUND",
  IS_DIRECTORY: "IS_DIRECTORY",
  // There is no tool-level NOT_A_DIRECTORY: the model fixes it the same way as any bad path.
  NOT_A_DIRECTORY: "INVALID_PATH",
  STALE_VERSION: "STALE_VERSION",
  FILE_BUSY: "FILE_BUSY",
  IO_ERROR: "IO_ERROR",
};

/** Turn a WorkspaceError into the matching ToolError; anything else is unexpected and rethrown. */
function toToolError(error: unknown): unknown {
  if (error instanceof WorkspaceError) {
    return new ToolError(WORKSPACE_TO_TOOL_CODE[error.code], error.message, {
      data: { path: error.path, workspace_code: error.code },
    });
  }
  return error;
}

/** Run a workspace operation, reporting its expected failures as ToolError. */
export async function viaWorkspace<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw toToolError(error);
  }
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new ToolError("CANCELLED", "the call was cancelled");
}

/**
 * Resource key for scheduling: derived from the arguments alone (no disk access), lexically
 * normalized when the path is valid so `./a.ts` and `a.ts` conflict; an invalid path is kept
 * verbatim (the call will fail before touching anything).
 */
function fileResource(path: string | undefined): string {
  const raw = path ?? ".";
  try {
    return `file:${normalizeRelativePath(raw)}`;
  } catch {
    return `file:${raw}`;
  }
}

/** What a tool definition says about how it may be scheduled and retried. */
type Traits<Args> = Pick<
  ToolDefinition<Args>,
  "version" | "effect" | "idempotency" | "resources" | "concurrencySafe"
>;

/**
 * What every tool that only reads the files at or under `args.path` is: read-only, idempotent,
 * scheduled as a read of that path, so it runs beside other reads.
 */
export function readsFiles<Args extends { path?: string | undefined }>(): Traits<Args> {
  return {
    version: FILE_TOOL_VERSION,
    effect: "read_only",
    idempotency: "idempotent",
    resources: (args) => ({ read: [fileResource(args.path)], write: [] }),
    concurrencySafe: () => true,
  };
}

/**
 * What every tool that changes the file at `args.path` is: a local write that applies only to
 * the version read (so a repeat is refused, not applied twice), scheduled as a write of that path
 * and never run beside another call.
 */
export function changesFile<Args extends { path: string }>(): Traits<Args> & { timeoutMs: number } {
  return {
    version: FILE_TOOL_VERSION,
    effect: "local_write",
    idempotency: "conditionally_idempotent",
    timeoutMs: 30_000,
    resources: (args) => ({ read: [], write: [fileResource(args.path)] }),
    concurrencySafe: () => false,
  };
}

const strictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/**
 * Decode UTF-8 strictly: invalid bytes are an INVALID_UTF8 error, never U+FFFD. A BOM is kept
 * as content (U+FEFF) so that re-encoding reproduces the bytes exactly.
 */
export function decodeUtf8(bytes: Uint8Array, path: string): string {
  try {
    return strictDecoder.decode(bytes);
  } catch {
    throw invalidUtf8(path, firstInvalidUtf8Offset(bytes));
  }
}

/** INVALID_UTF8 for a file whose first bad byte is at `offset`. */
export function invalidUtf8(path: string, offset: number): ToolError {
  return new ToolError(
    "INVALID_UTF8",
    `${path} is not valid UTF-8 text (first invalid byte at offset ${offset}); it cannot be read or edited as text`,
    { data: { path, offset } },
  );
}

export function isValidUtf8(bytes: Uint8Array): boolean {
  try {
    strictDecoder.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

function encodeUtf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Byte offset of the first byte that is not part of a well-formed UTF-8 sequence (-1: none). */
export function firstInvalidUtf8Offset(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i] as number;
    let length: number;
    let min = 0x80;
    let max = 0xbf;
    if (lead < 0x80) {
      i++;
      continue;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      if (lead === 0xe0) min = 0xa0;
      if (lead === 0xed) max = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      if (lead === 0xf0) min = 0x90;
      if (lead === 0xf4) max = 0x8f;
    } else {
      return i;
    }
    for (let k = 1; k < length; k++) {
      const byte = bytes[i + k];
      const low = k === 1 ? min : 0x80;
      const high = k === 1 ? max : 0xbf;
      if (byte === undefined || byte < low || byte > high) return i;
    }
    i += length;
  }
  return -1;
}

/** Text cannot be stored as UTF-8 if it holds an unpaired surrogate (it would become U+FFFD). */
export function assertEncodable(text: string, field: string): void {
  if (/[\ud800-\udfff]/u.test(text)) {
    throw new ToolError(
      "SEMANTIC_VALIDATION_ERROR",
      `${field} contains an unpaired UTF-16 surrogate, which cannot be written as UTF-8`,
    );
  }
}

export interface BoundTarget {
  /** The canonical path the change applies to. */
  path: string;
  /** Current bytes, or undefined when the file does not exist yet. */
  current: Uint8Array | undefined;
  /** What writeFileAtomic must find at commit time: the current version, or null (absent). */
  expectedVersion: string | null;
  /** Whether the existing file is executable by its owner (kept by the write). */
  exec: boolean;
}

/**
 * The version binding of write_file and edit_file: an existing file may be changed only if this
 * session observed it and it still has the observed version (and `expected_version`, if given).
 * A missing file may be created without observation, unless `expected_version` claims it exists.
 */
export async function bindForChange(
  context: ToolContext,
  path: string,
  expectedVersion: string | undefined,
): Promise<BoundTarget> {
  const canonical = await viaWorkspace(() => context.fs.resolve(path));
  // Before the read and version checks: a protected file is refused whether or not it was read.
  // (writeFileAtomic checks again at commit time.)
  await viaWorkspace(async () =>
    context.fs.protectedPaths.assertWritable(path, relativeParts(path), canonical.split("/")),
  );
  const stat = await viaWorkspace(() => context.fs.stat(canonical));
  if (stat?.kind === "directory") throw new ToolError("IS_DIRECTORY", `${canonical} is a directory`);
  if (stat === undefined) {
    if (expectedVersion !== undefined) {
      throw new ToolError("STALE_VERSION", `${canonical} does not exist, but expected_version was given`, {
        data: { path: canonical },
      });
    }
    return { path: canonical, current: undefined, expectedVersion: null, exec: false };
  }
  const current = await viaWorkspace(() => context.fs.readFile(canonical));
  const currentVersion = versionOf(current);
  const observed = context.observedVersion(canonical);
  if (observed === undefined) {
    throw new ToolError(
      "NOT_READ",
      `${canonical} exists and has not been read in this session; read it first`,
      {
        data: { path: canonical },
      },
    );
  }
  if (observed !== currentVersion) {
    throw new ToolError("STALE_VERSION", `${canonical} changed since it was last read; read it again`, {
      data: { path: canonical, current_version: currentVersion },
    });
  }
  if (expectedVersion !== undefined && expectedVersion !== currentVersion) {
    throw new ToolError("STALE_VERSION", `${canonical} is not at expected_version ${expectedVersion}`, {
      data: { path: canonical, current_version: currentVersion },
    });
  }
  return { path: canonical, current, expectedVersion: currentVersion, exec: (stat.mode & 0o100) !== 0 };
}

/**
 * Write `text` to a bound target, atomically and only if it still has the version it was bound
 * to (otherwise STALE_VERSION and nothing changes). Returns what was written and its version.
 */
export async function commitChange(
  context: ToolContext,
  target: BoundTarget,
  text: string,
): Promise<{ bytes: Uint8Array; version: string }> {
  const bytes = encodeUtf8(text);
  const version = versionOf(bytes);
  // The bytes being replaced are kept before they are gone, so the change can be undone.
  if (context.workspaceChanged && target.current !== undefined) await context.artifacts.put(target.current);
  await viaWorkspace(() =>
    context.fs.writeFileAtomic(target.path, bytes, { expectedVersion: target.expectedVersion }),
  );
  const after = { hash: version, size: bytes.byteLength, exec: target.exec };
  if (target.current === undefined) {
    context.workspaceChanged?.({ created: [{ path: target.path, after }], modified: [], deleted: [] });
  } else if (target.expectedVersion !== version) {
    const before = {
      hash: target.expectedVersion as string,
      size: target.current.byteLength,
      exec: target.exec,
    };
    context.workspaceChanged?.({
      created: [],
      modified: [{ path: target.path, before, after }],
      deleted: [],
    });
  }
  return { bytes, version };
}

export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : pluralForm}`;
}
