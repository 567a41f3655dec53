import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import type { JournalKey } from "../journal/key.js";
import { SESSION_ID_PATTERN } from "../journal/session-path.js";
import { canonicalJson, sha256Hex } from "../shared/hash.js";

/**
 * A queued session: what `harness queue submit` stores and a worker runs. Everything here came
 * from a user's file or flags, so it is parsed (strict) before it is stored, and parsed again when
 * a worker reads it back from the database (a row is outside data too).
 */

/**
 * Where a task's workspace comes from. `shared`: a path every worker can reach (network storage);
 * the session can move to any worker. `copy` and `git`: materialized on the worker that starts the
 * session, in its own directory, so that copy exists only on that worker's disk.
 */
export const workspaceSourceSchema = z.union([
  z.strictObject({ shared: z.string().min(1) }),
  z.strictObject({ copy: z.string().min(1) }),
  z.strictObject({ git: z.string().min(1), revision: z.string().min(1) }),
]);
export type WorkspaceSource = z.infer<typeof workspaceSourceSchema>;

const sessionId = z.string().regex(SESSION_ID_PATTERN, "letters, digits, '.', '_' or '-' (at most 64)");

/** The run options a task may carry: the same names and values as `harness run`'s flags. */
export const taskOptionsSchema = z.strictObject({
  script: z.string().min(1).optional(),
  provider: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  "base-url": z.string().min(1).optional(),
  "api-key-env": z.string().min(1).optional(),
  profile: z.string().min(1).optional(),
  write: z.enum(["allow", "ask", "deny", "propose"]).optional(),
  shell: z.enum(["allow", "ask", "deny"]).optional(),
  sandbox: z.enum(["workspace-write", "read-only", "off"]).optional(),
  tools: z.string().min(1).optional(),
  "read-only": z.boolean().optional(),
  allow: z.array(z.string()).optional(),
  ask: z.array(z.string()).optional(),
  deny: z.array(z.string()).optional(),
  accept: z.array(z.string()).optional(),
  "accept-timeout": z.string().optional(),
  "max-model-requests": z.string().optional(),
  "max-tool-calls": z.string().optional(),
  "context-window": z.string().optional(),
  "request-deadline": z.string().optional(),
  "read-path": z.array(z.string()).optional(),
  "edit-path": z.array(z.string()).optional(),
  "agents-depth": z.string().optional(),
  "agents-concurrent": z.string().optional(),
  "agents-max": z.string().optional(),
});
export type TaskOptions = z.infer<typeof taskOptionsSchema>;

/** A task as stored: absolute paths only, so any worker reads it the same way. */
export const fleetTaskSchema = z.strictObject({
  session: sessionId,
  goal: z.string().min(1),
  workspace: workspaceSourceSchema,
  options: taskOptionsSchema,
});
export type FleetTask = z.infer<typeof fleetTaskSchema>;

/** One line of a `--tasks` file. A plain string workspace is a shared path. */
const taskLineSchema = z.strictObject({
  goal: z.string().min(1),
  workspace: z.union([z.string().min(1), workspaceSourceSchema]),
  session: sessionId.optional(),
  script: z.string().min(1).optional(),
  provider: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  write: z.enum(["allow", "ask", "deny", "propose"]).optional(),
  shell: z.enum(["allow", "ask", "deny"]).optional(),
  accept: z.array(z.string()).optional(),
});

export class TaskError extends Error {
  override readonly name = "TaskError";
}

/** Paths in a task are relative to where it was written (the tasks file's directory, or the cwd). */
export function absoluteSource(source: WorkspaceSource, base: string): WorkspaceSource {
  const at = (path: string) => (isAbsolute(path) ? path : resolve(base, path));
  if ("shared" in source) return { shared: at(source.shared) };
  if ("copy" in source) return { copy: at(source.copy) };
  // A git source is a URL or a path; only a local path is made absolute.
  return /^[a-z][a-z0-9+.-]*:/i.test(source.git) ? source : { ...source, git: at(source.git) };
}

/**
 * Parse a tasks file: one JSON object per line, blank lines skipped. An error names the line and
 * the field, so the user can fix the file; nothing is queued from a file with any bad line.
 */
export function parseTasksFile(text: string, base: string, newSession: () => string): FleetTask[] {
  const tasks: FleetTask[] = [];
  const lines = text.split("\n");
  for (const [index, line] of lines.entries()) {
    if (line.trim() === "") continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (error) {
      throw new TaskError(`line ${index + 1}: not JSON (${(error as Error).message})`);
    }
    const parsed = taskLineSchema.safeParse(raw);
    if (!parsed.success) throw new TaskError(`line ${index + 1}: ${z.prettifyError(parsed.error)}`);
    const { goal, workspace, session, accept, ...flags } = parsed.data;
    const source = typeof workspace === "string" ? { shared: workspace } : workspace;
    const options: TaskOptions = { ...flags, ...(accept ? { accept } : {}) };
    if (options.script !== undefined) options.script = resolve(base, options.script);
    tasks.push({
      goal,
      workspace: absoluteSource(source, base),
      options,
      session: session ?? newSession(),
    });
  }
  if (tasks.length === 0) throw new TaskError("the tasks file holds no task");
  return tasks;
}

/** A stored task read back from the database. */
export function parseStoredTask(value: unknown): FleetTask {
  const parsed = fleetTaskSchema.safeParse(value);
  if (!parsed.success) throw new TaskError(`stored task is malformed: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/**
 * A task row's tag: an HMAC under the journal key that submitters and workers share, over the
 * task's canonical JSON (domain-separated from record hashes). A worker runs a task only when its
 * tag verifies, so whoever can write the database without holding the key cannot change what a
 * worker imports (`script`), runs (`accept`, `sandbox`, rules) or sends the provider key to
 * (`base-url`), exactly as they cannot change a journal record.
 */
export function taskTag(task: FleetTask, key: JournalKey): string {
  return key.sign(sha256Hex(`harness fleet task\n${canonicalJson(task)}`));
}
