import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The CLI as a user runs it: the built entry point in a separate process, an environment that
 * holds only what the test puts there (no inherited keys, no user config), and the results
 * judged from the exit code, stdout/stderr and the files under the workspace.
 */

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const BIN = join(REPO_ROOT, "dist/src/cli/bin.js");

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface JournalLine {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

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

export function startCli(args: readonly string[], env: NodeJS.ProcessEnv, cwd = REPO_ROOT): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
}

export function finished(child: ChildProcess): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolvePromise, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolvePromise({ code, signal, stdout, stderr }));
  });
}

export function runCli(args: readonly string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return finished(startCli(args, env));
}

/** Fail with the process's output when the exit code differs. */
export function expectExit(result: CliResult, code: number): void {
  if (result.code !== code) {
    throw new Error(
      `expected exit ${code}, got ${result.code ?? result.signal}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`,
    );
  }
}

/** The one JSON object `--json` prints. */
export function jsonSummary(result: CliResult): Record<string, unknown> {
  const lines = result.stdout.split("\n").filter((line) => line !== "");
  if (lines.length !== 1)
    throw new Error(`expected one JSON line on stdout, got:\n${result.stdout}\n${result.stderr}`);
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

const temps: string[] = [];

export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  temps.push(dir);
  return dir;
}

export async function removeTemps(): Promise<void> {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

export async function workspaceWith(files: Record<string, string>): Promise<string> {
  const dir = await tempDir("harness-prov-ws-");
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);
  return dir;
}

export async function readJournal(workspace: string, session: string): Promise<JournalLine[]> {
  const text = await readFile(join(workspace, ".harness", "sessions", session, "events.jsonl"), "utf8");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as JournalLine);
}

export function ofType(records: readonly JournalLine[], type: string): JournalLine[] {
  return records.filter((record) => record.type === type);
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

export { ensureBuilt } from "../e2e/helpers.js";
