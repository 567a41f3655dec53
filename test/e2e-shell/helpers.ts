import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { childEnv, startHarness } from "../e2e/helpers.js";

/**
 * The CLI as a child process with a chosen extra environment (the e2e helpers inherit the
 * parent's). stdin is ignored, so the CLI sees no terminal: the non-interactive defaults apply.
 */
export function startHarnessWith(
  args: readonly string[],
  extraEnv: Record<string, string> = {},
): ChildProcess {
  return startHarness(args, { env: { ...childEnv(), ...extraEnv } });
}

/**
 * A directory outside both the workspace and /tmp: the sandbox gives commands a private /tmp,
 * so "outside the workspace" must be somewhere else that the user can write.
 */
export async function outsideDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join("/var/tmp", "harness-outside-"));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
