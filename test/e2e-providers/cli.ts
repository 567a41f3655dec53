import type { ChildProcess } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type CliResult, finished, startHarness } from "../e2e/helpers.js";

/**
 * The CLI as a user runs it: the built entry point in a separate process, an environment that
 * holds only what the test puts there (no inherited keys, no user config), and the results
 * judged from the exit code, stdout/stderr and the files under the workspace.
 */

/** Variables that would change how the CLI behaves or leak a real key into a test. */
const SCRUBBED = [
  "OPENAI_API_KEY",
  "ANTHROPIC_API_KEY",
  "HARNESS_CONFIG",
  "NODE_OPTIONS",
  "FORCE_COLOR",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "http_proxy",
  "https_proxy",
];

/** A child environment whose HOME is an empty directory, plus `extra`. */
export function cliEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1", HOME: home };
  for (const name of SCRUBBED) delete env[name];
  return { ...env, ...extra };
}

export function startCli(args: readonly string[], env: NodeJS.ProcessEnv): ChildProcess {
  return startHarness(args, { env });
}

export function runCli(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return finished(startCli(args, env));
}

/** Every file below `dir` whose bytes contain `needle`, as paths relative to `dir`. */
export async function filesContaining(dir: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  const bytes = Buffer.from(needle, "utf8");
  const walk = async (current: string): Promise<void> => {
    for (const entry of await readdir(current, { withFileTypes: true })) {
      const path = join(current, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && (await readFile(path)).includes(bytes))
        hits.push(path.slice(dir.length + 1));
    }
  };
  await walk(dir);
  return hits;
}

/** Count the files below `dir` (to prove a secret scan looked at something). */
export async function fileCount(dir: string): Promise<number> {
  let count = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) count += 1;
  return count;
}

export {
  BIN,
  type CliResult,
  ensureBuilt,
  expectExit,
  finished,
  type JournalLine,
  jsonSummary,
  ofType,
  REPO_ROOT,
  readJournal,
  removeTempDirs as removeTemps,
  tempDir,
  workspaceWith,
} from "../e2e/helpers.js";
