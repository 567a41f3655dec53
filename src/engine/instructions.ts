import { createHash } from "node:crypto";
import type { EventData } from "../journal/vocabulary.js";
import { sha256Hex } from "../shared/hash.js";
import { WorkspaceError, type WorkspaceFs } from "../workspace/fs.js";
import { EngineError } from "./errors.js";
import { taskFrameText } from "./task-frame.js";

/**
 * Project instructions (`AGENTS.md`) and the statement of the environment the agent works in.
 * What the model is told comes from the journal only: the files' texts are recorded when they
 * are read (`instructions.loaded`) and the environment in `session.started`, so a resumed
 * session sends the same bytes. The files are text for the model; the host never runs them.
 */

export const INSTRUCTIONS_FILE = "AGENTS.md";
/** Largest part of one instructions file that is sent; the rest is cut with a visible marker. */
export const INSTRUCTIONS_LIMIT_BYTES = 32 * 1024;
/**
 * Most bytes of instructions text a session pins (the start files in the system message, nested
 * files in the history and again after every compaction): two whole files' worth, so the user's
 * and the root's files always fit. A file that would pass it is listed by path and digest only.
 */
export const PINNED_INSTRUCTIONS_BUDGET_BYTES = 2 * INSTRUCTIONS_LIMIT_BYTES;

export type InstructionFile = EventData<"instructions.loaded">["files"][number];
export type SessionEnvironment = NonNullable<EventData<"session.started">["environment"]>;

/** The instructions a session starts with: the user's file and the workspace root's, when present. */
export interface StartInstructions {
  user?: { path: string; bytes: Uint8Array };
  /** Read from the workspace root at start, and again on resume to compare digests. */
  workspace: boolean;
}

/** A file's record: the digest is of the whole file, the text at most the limit. */
export function instructionFile(
  source: InstructionFile["source"],
  path: string,
  bytes: Uint8Array,
): InstructionFile {
  return instructionRecord(
    source,
    path,
    bytes.subarray(0, INSTRUCTIONS_LIMIT_BYTES),
    bytes.byteLength,
    sha256Hex(bytes),
  );
}

function instructionRecord(
  source: InstructionFile["source"],
  path: string,
  head: Uint8Array,
  size: number,
  sha256: string,
): InstructionFile {
  const truncated = size > INSTRUCTIONS_LIMIT_BYTES;
  // A cut inside a multi-byte character decodes to U+FFFD; drop it so the text stays clean.
  let text = new TextDecoder().decode(head);
  if (truncated) {
    text = `${text.replace(/\uFFFD+$/, "")}\n[harness: ${path} is ${size} bytes; only its first ${INSTRUCTIONS_LIMIT_BYTES} bytes are included]`;
  }
  return { source, path, sha256, bytes: size, truncated, text };
}

/** Bytes of instructions text already pinned: every file sent whole (a listed one costs nothing). */
export function pinnedBytes(files: readonly InstructionFile[]): number {
  let total = 0;
  for (const file of files) if (file.listed !== true) total += Buffer.byteLength(file.text, "utf8");
  return total;
}

/**
 * Apply the pinned-instructions budget to files about to be loaded, in the order given, after
 * what is pinned already: each file is sent whole while it fits, otherwise listed by path and
 * SHA-256 with a note that it can be read. A later, smaller file may still fit after a larger one
 * did not.
 */
export function withinBudget(
  files: readonly InstructionFile[],
  alreadyPinned: number,
  budget: number = PINNED_INSTRUCTIONS_BUDGET_BYTES,
): InstructionFile[] {
  let used = alreadyPinned;
  return files.map((file) => {
    const size = Buffer.byteLength(file.text, "utf8");
    if (used + size <= budget) {
      used += size;
      return file;
    }
    return listedFile(file, budget);
  });
}

/**
 * Nested files in the order they are loaded and budgeted: outer directories first, then by path,
 * so which files fit does not depend on which call touched a directory first.
 */
export function nestedOrder(files: readonly InstructionFile[]): InstructionFile[] {
  const depth = (path: string) => path.split("/").length;
  return [...files].sort(
    (a, b) => depth(a.path) - depth(b.path) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0),
  );
}

function listedFile(file: InstructionFile, budget: number): InstructionFile {
  const text =
    `[harness: ${file.path} (${scopeOf(file)}) is not included: the instructions this session already ` +
    `pinned reach the ${budget}-byte budget. It holds ${file.bytes} bytes, sha256 ${file.sha256}. ` +
    "Read it with read_file before working on the files it covers; follow it as you would if it were included.]";
  return { ...file, text, listed: true };
}

/**
 * A workspace file's record, read in chunks: the digest covers the whole file, but only the part
 * that is sent is held, so a repository's sparse multi-gigabyte AGENTS.md costs reading time, not
 * gigabytes of memory.
 */
async function readInstructionFile(
  fs: WorkspaceFs,
  source: InstructionFile["source"],
  path: string,
): Promise<InstructionFile> {
  const hash = createHash("sha256");
  const head = new Uint8Array(INSTRUCTIONS_LIMIT_BYTES);
  let size = 0;
  for await (const chunk of fs.readChunks(path)) {
    hash.update(chunk);
    if (size < INSTRUCTIONS_LIMIT_BYTES) head.set(chunk.subarray(0, INSTRUCTIONS_LIMIT_BYTES - size), size);
    size += chunk.byteLength;
  }
  return instructionRecord(
    source,
    path,
    head.subarray(0, Math.min(size, INSTRUCTIONS_LIMIT_BYTES)),
    size,
    hash.digest("hex"),
  );
}

/** `<dir>/AGENTS.md` from the workspace, or undefined when there is none (or it is not a file). */
export async function readWorkspaceInstructions(
  fs: WorkspaceFs,
  directory: string,
): Promise<InstructionFile | undefined> {
  const path = directory === "." ? INSTRUCTIONS_FILE : `${directory}/${INSTRUCTIONS_FILE}`;
  try {
    const stat = await fs.stat(path);
    if (stat?.kind !== "file") return undefined;
    return await readInstructionFile(fs, directory === "." ? "workspace" : "nested", path);
  } catch (error) {
    // Outside the boundary (a symlink out) or gone meanwhile: no instructions from there. A file
    // that exists and cannot be read is the caller's to judge.
    if (error instanceof WorkspaceError && error.code !== "IO_ERROR") return undefined;
    throw error;
  }
}

/** Directories strictly between the root and a workspace-relative file path, outermost first. */
export function directoriesAbove(path: string): string[] {
  const parts = path.split("/").slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

const WRITE_MODE_TEXT: Record<SessionEnvironment["write"], string> = {
  allow: "file writes inside the workspace are allowed",
  ask: "each file write needs a person's approval (it may be denied)",
  deny: "file writes are denied; do not try to change files",
  propose: "file writes become proposals a person reviews later; the files on disk do not change",
};
const SHELL_MODE_TEXT: Record<SessionEnvironment["shell"], string> = {
  allow: "shell commands are allowed",
  ask: "each shell command needs a person's approval (it may be denied)",
  deny: "shell commands are denied; use the file tools",
};
const SANDBOX_TEXT: Record<SessionEnvironment["sandbox"], string> = {
  "workspace-write":
    "commands run in a sandbox that may write only inside the workspace (and a private /tmp)",
  "read-only": "commands run in a read-only sandbox: they cannot change the workspace",
  none: "commands run without a sandbox",
};

/** The environment as stated to the model, from what the session recorded at start. */
export function environmentText(env: SessionEnvironment): string {
  const lines = [
    "Environment of this session:",
    `- Operating system: ${env.os}; shell: ${env.shell_program}.`,
    `- Sandbox profile: ${env.sandbox}: ${SANDBOX_TEXT[env.sandbox]}.`,
    `- Write mode: ${env.write}: ${env.read_only ? "the run is read-only; file writes are denied" : WRITE_MODE_TEXT[env.write]}.`,
    `- Shell mode: ${env.shell}: ${SHELL_MODE_TEXT[env.shell]}.`,
  ];
  if (env.task) lines.push(taskFrameText(env.task));
  return lines.join("\n");
}

function scopeOf(file: InstructionFile): string {
  return file.source === "user"
    ? "the user's instructions for every project"
    : file.source === "workspace"
      ? "the project's instructions"
      : `instructions for files under ${file.path.slice(0, -INSTRUCTIONS_FILE.length - 1)}/`;
}

/**
 * One instructions file as the model reads it: where it comes from, then its text verbatim; a
 * file over the budget is the notice naming it (its recorded text).
 */
export function instructionsText(file: InstructionFile): string {
  if (file.listed === true) return file.text;
  return `Instructions from ${file.path} (${scopeOf(file)}). Follow them; they cannot grant permissions.\n<instructions>\n${file.text}\n</instructions>`;
}

/**
 * The system message: the fixed rules, then what this session recorded at start (environment,
 * user and root instructions). Fixed for the whole session, so every request starts with the
 * same bytes.
 */
export function systemText(
  base: string,
  environment: SessionEnvironment | undefined,
  files: readonly InstructionFile[],
): string {
  const parts = [base];
  if (environment) parts.push(environmentText(environment));
  for (const file of files) parts.push(instructionsText(file));
  return parts.join("\n\n");
}

/** The files a session starts with, as they are now (read again on resume to compare). */
export async function startInstructionFiles(
  start: StartInstructions,
  fs: WorkspaceFs,
  readable: (path: string) => Promise<boolean>,
): Promise<InstructionFile[]> {
  const files: InstructionFile[] = [];
  if (start.user) files.push(instructionFile("user", start.user.path, start.user.bytes));
  // A root file the policy would not let read_file read is never read here either.
  if (start.workspace && (await readable(INSTRUCTIONS_FILE))) {
    const root = await readWorkspaceInstructions(fs, ".").catch((error: unknown) => {
      // The project's rules must not silently go missing from a session.
      if (!(error instanceof WorkspaceError)) throw error;
      throw new EngineError(
        "BAD_INPUT",
        `${INSTRUCTIONS_FILE} at the workspace root cannot be read (${error.message}); fix its permissions or remove it`,
      );
    });
    if (root) files.push(root);
  }
  // Two files of at most INSTRUCTIONS_LIMIT_BYTES each: within the budget, which still applies.
  return withinBudget(files, 0);
}

/** Which start files differ from what the session recorded (added, removed or changed). */
export function changedInstructions(
  recorded: readonly InstructionFile[],
  current: readonly InstructionFile[],
): string[] {
  const changed: string[] = [];
  for (const source of ["user", "workspace"] as const) {
    const before = recorded.find((f) => f.source === source);
    const now = current.find((f) => f.source === source);
    if (before?.sha256 === now?.sha256) continue;
    const path = before?.path ?? now?.path ?? INSTRUCTIONS_FILE;
    const what = before === undefined ? "added" : now === undefined ? "removed" : "changed";
    changed.push(`${source === "user" ? "user" : "project"} instructions (${path} ${what})`);
  }
  return changed;
}

const TOUCHING_TOOLS = new Set(["read_file", "write_file", "edit_file"]);

/**
 * Nested rules: after calls settle, each directory between the root and a file a call read or
 * wrote is looked at once for its own AGENTS.md. What was found and looked at is journaled, so
 * a resume neither loads a file twice nor looks again where it looked before; a check a crash
 * interrupted is simply done again.
 */
export class NestedInstructions {
  /** History entries already scanned by this process (a resume scans the whole history once). */
  private scanned = 0;

  constructor(
    private readonly fs: WorkspaceFs,
    /** Whether the session's policy lets read_file read this path (a denied file is not sent). */
    private readonly readable: (path: string) => Promise<boolean>,
  ) {}

  async check(state: {
    history: readonly { name: string; status: string; data?: Record<string, unknown> }[];
    checkedDirectories: ReadonlySet<string>;
    /** Every file loaded so far (what is pinned already counts against the budget). */
    instructions: readonly InstructionFile[];
  }): Promise<EventData<"instructions.loaded"> | undefined> {
    const directories: string[] = [];
    for (const entry of state.history.slice(this.scanned)) {
      const path = entry.data?.path;
      if (!TOUCHING_TOOLS.has(entry.name) || entry.status !== "ok" || typeof path !== "string") continue;
      for (const directory of directoriesAbove(path)) {
        if (!state.checkedDirectories.has(directory) && !directories.includes(directory))
          directories.push(directory);
      }
    }
    this.scanned = state.history.length;
    if (directories.length === 0) return undefined;
    const files: InstructionFile[] = [];
    for (const directory of directories) {
      // A nested file that cannot be read is treated as absent: the agent could not read it either.
      const file = await readWorkspaceInstructions(this.fs, directory).catch(() => undefined);
      if (file && (await this.readable(file.path))) files.push(file);
    }
    return {
      trigger: "nested",
      files: withinBudget(nestedOrder(files), pinnedBytes(state.instructions)),
      checked: directories,
    };
  }
}
