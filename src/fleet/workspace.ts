import { cp, mkdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import { Executor } from "../sandbox/executor.js";
import { NoSandbox } from "../sandbox/none.js";
import { isExecutable } from "../tools/shell/locate.js";
import type { WorkspaceSource } from "./task.js";

/**
 * Where a queued session's workspace is on this worker. A shared path is used where it is (every
 * worker reaches it, so the session can move between workers). A copy or a git checkout is made
 * once, on the worker that starts the session, under that worker's own directory: it exists only
 * on that worker's disk, which is why another worker never continues such a session (see
 * worker.ts: it stops for review instead of starting it again from scratch).
 */

export class WorkspaceSourceError extends Error {
  override readonly name = "WorkspaceSourceError";
}

/** Whether a session on this source can continue on another worker after its first one died. */
export function isShared(source: WorkspaceSource): boolean {
  return "shared" in source;
}

/** Make the workspace at `target` (a directory that must not exist yet) from a copy or git source. */
export async function materialize(
  source: WorkspaceSource,
  target: string,
  signal?: AbortSignal,
): Promise<string> {
  if ("shared" in source) return source.shared;
  await mkdir(path.dirname(target), { recursive: true });
  if (await exists(target)) await rm(target, { recursive: true, force: true });
  if ("copy" in source) {
    const info = await stat(source.copy).catch(() => undefined);
    if (!info?.isDirectory()) throw new WorkspaceSourceError(`copy source ${source.copy} is not a directory`);
    // The source's own journals and locks stay behind: the copy starts with no harness state.
    await cp(source.copy, target, {
      recursive: true,
      verbatimSymlinks: true,
      filter: (from) => path.basename(from) !== ".harness",
    });
    return target;
  }
  await gitCheckout(source.git, source.revision, target, signal);
  return target;
}

async function exists(file: string): Promise<boolean> {
  return (await stat(file).catch(() => undefined)) !== undefined;
}

/**
 * Git configuration that makes a checkout of someone else's repository run nothing of theirs and
 * read nothing of this user's: no hooks, no fsmonitor program, no `ext::` transport, no system or
 * global config (which could name helpers), no prompts.
 */
const SAFE_GIT_CONFIG = [
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "protocol.ext.allow=never",
  "-c",
  "advice.detachedHead=false",
];
const SAFE_GIT_ENV = { GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null", GIT_TERMINAL_PROMPT: "0" };

/** Clone and check out one revision, through the executor like every process harness starts. */
async function gitCheckout(repo: string, revision: string, target: string, signal?: AbortSignal) {
  if (revision.startsWith("-")) throw new WorkspaceSourceError(`revision "${revision}" is not a revision`);
  const git = ["/usr/bin/git", "/bin/git", "/usr/local/bin/git"].find(isExecutable);
  if (!git) throw new WorkspaceSourceError("git is not installed on this worker");
  const executor = new Executor({ environment: { ...process.env, ...SAFE_GIT_ENV } });
  const profile = { sandbox: new NoSandbox(), env: { allow: Object.keys(SAFE_GIT_ENV) } };
  const run = async (cwd: string, args: string[]) => {
    const result = await executor.execute({
      purpose: "workspace",
      argv: [git, ...SAFE_GIT_CONFIG, ...args],
      workspace: cwd,
      profile,
      timeoutMs: 600_000,
      ...(signal ? { signal } : {}),
    });
    if (result.exitCode !== 0) {
      throw new WorkspaceSourceError(
        `git ${args[0]} failed (exit ${String(result.exitCode)}): ${`${result.stderr.head}${result.stderr.tail}`.slice(-2000)}`,
      );
    }
  };
  await run(path.dirname(target), ["clone", "--no-checkout", "--quiet", "--", repo, target]);
  await run(target, ["checkout", "--quiet", "--detach", revision, "--"]);
}
