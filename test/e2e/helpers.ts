import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Black-box helpers: the CLI is always run as a separate process from its built entry point, and
 * everything is judged from what a user can see (exit code, stdout, stderr, bytes on disk).
 */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const BIN = join(REPO_ROOT, "dist/src/cli/bin.js");
export const FIXTURES = join(REPO_ROOT, "test/e2e/fixtures");
export const PACKAGE_VERSION = (
  JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { version: string }
).version;

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** One journal line as a user sees it in events.jsonl. */
export interface JournalLine {
  seq: number;
  type: string;
  time: string;
  data: Record<string, unknown>;
  prev: string;
  hash: string;
}

/** A clean child environment: no colours, no TTY guesses, nothing inherited that changes output. */
export function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  delete env.FORCE_COLOR;
  delete env.NODE_OPTIONS;
  // A width from the shell would cut human output (src/cli/fit.ts); tests that want one set it.
  delete env.COLUMNS;
  return env;
}

/** Run `harness ARGS` to completion. */
export function harness(args: readonly string[], options: { cwd?: string } = {}): Promise<CliResult> {
  const child = startHarness(args, options);
  return finished(child);
}

/** Start `harness ARGS`; `env` replaces the default child environment when given. */
export function startHarness(
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: options.env ?? childEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** Collect a child's output until it has exited and its pipes are closed. */
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

/** `--events` lines that are not journal records: streamed UI events such as text deltas. */
export const isTransientLine = (line: string): boolean => line.startsWith('{"transient":true');

/**
 * Call `onLine` for each complete stdout line that is a journal record as it arrives (for reacting
 * to `--events`; transient text deltas are skipped and not counted in `index`).
 */
export function onStdoutLine(child: ChildProcess, onLine: (line: string, index: number) => void): void {
  let buffered = "";
  let index = 0;
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => {
    buffered += chunk;
    for (let newline = buffered.indexOf("\n"); newline !== -1; newline = buffered.indexOf("\n")) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (isTransientLine(line)) continue;
      index += 1;
      onLine(line, index);
    }
  });
}

const tempRoots: string[] = [];

export async function tempDir(prefix = "harness-e2e-"): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  tempRoots.push(dir);
  return dir;
}

export async function removeTempDirs(): Promise<void> {
  await Promise.all(tempRoots.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

/** A fresh workspace directory holding the given files. */
export async function workspaceWith(files: Record<string, string>): Promise<string> {
  const dir = await tempDir("harness-ws-");
  for (const [name, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, name)), { recursive: true });
    await writeFile(join(dir, name), content);
  }
  return dir;
}

/** Write a JSON script file outside any workspace and return its path. */
export async function jsonScript(replies: unknown[], name = "script.json"): Promise<string> {
  const dir = await tempDir("harness-script-");
  const path = join(dir, name);
  await writeFile(path, JSON.stringify({ replies }));
  return path;
}

/**
 * A printed command, run by /bin/sh as a person pastes it, from `cwd`: `harness` in it is the
 * built CLI (a `harness` script first on PATH).
 */
export async function pasteAsPrinted(
  line: string,
  cwd: string,
  env: NodeJS.ProcessEnv = childEnv(),
): Promise<CliResult> {
  const bin = await tempDir("harness-bin-");
  await writeFile(
    join(bin, "harness"),
    `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"\n`,
    { mode: 0o755 },
  );
  const path = { ...env, PATH: `${bin}:${process.env.PATH ?? ""}` };
  return finished(spawn("/bin/sh", ["-c", line], { cwd, env: path, stdio: ["ignore", "pipe", "pipe"] }));
}

export function fixture(name: string): string {
  return join(FIXTURES, name);
}

export function sessionDir(workspace: string, id: string): string {
  return join(workspace, ".harness", "sessions", id);
}

export function journalFile(workspace: string, id: string): string {
  return join(sessionDir(workspace, id), "events.jsonl");
}

export function lockFile(workspace: string, id: string): string {
  return join(sessionDir(workspace, id), "writer.lock");
}

export function sessionIds(workspace: string): string[] {
  const dir = join(workspace, ".harness", "sessions");
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

/** The journal's complete lines, parsed (a torn final line is left out). */
export async function readJournal(workspace: string, id: string): Promise<JournalLine[]> {
  const text = await readFile(journalFile(workspace, id), "utf8");
  const whole = text.endsWith("\n") ? text : text.slice(0, text.lastIndexOf("\n") + 1);
  return whole
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as JournalLine);
}

export function ofType(records: readonly JournalLine[], type: string): JournalLine[] {
  return records.filter((record) => record.type === type);
}

/** Each call's `tool.result` data, by call id. */
export function resultsByCall(records: readonly JournalLine[]): Map<string, Record<string, unknown>> {
  return new Map(ofType(records, "tool.result").map((r) => [String(r.data.call_id), r.data]));
}

/** How many records of each `type` mention each call id (for tool.started / tool.result). */
export function perCall(records: readonly JournalLine[], type: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const record of ofType(records, type)) {
    const id = String(record.data.call_id);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** The single JSON object `--json` prints (fails when stdout holds anything else). */
export function jsonSummary(result: CliResult): Record<string, unknown> {
  const lines = result.stdout.split("\n").filter((line) => line.length > 0);
  if (lines.length !== 1) {
    throw new Error(
      `expected one JSON line on stdout, got ${lines.length} (exit ${result.code ?? result.signal})\n` +
        `--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`,
    );
  }
  return JSON.parse(lines[0]!) as Record<string, unknown>;
}

/** Parse `--events` output: every stdout line but the transient ones must be one JSON record. */
export function ndjson(stdout: string): JournalLine[] {
  return stdout
    .split("\n")
    .filter((line) => line.length > 0 && !isTransientLine(line))
    .map((line) => JSON.parse(line) as JournalLine);
}

/**
 * Build dist when it is missing. Freshness is `npm test`'s job (it builds first): rebuilding here
 * whenever a source is newer would rewrite dist under test files already running in parallel.
 * A directory lock keeps parallel test files from building at the same time.
 */
export function ensureBuilt(): void {
  if (existsSync(BIN)) return;
  const lock = join(tmpdir(), "harness-e2e-build.lock");
  let owner = false;
  try {
    mkdirSync(lock);
    owner = true;
  } catch {
    // Someone else is building: wait for them below.
  }
  if (owner) {
    try {
      try {
        execFileSync(
          process.execPath,
          [join(REPO_ROOT, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"],
          {
            cwd: REPO_ROOT,
            stdio: "ignore",
          },
        );
      } catch {
        // Type errors elsewhere in the tree still emit JavaScript; a missing entry point is caught below.
      }
    } finally {
      rmdirSync(lock);
    }
  } else {
    const deadline = Date.now() + 120_000;
    while (existsSync(lock) && Date.now() < deadline) execFileSync("sleep", ["0.2"]);
  }
  if (!existsSync(BIN)) throw new Error(`the CLI is not built: ${BIN} is missing (run: npm run build)`);
}

/** Assert an exit code, showing the process's output when it differs. */
export function expectExit(result: CliResult, code: number): void {
  if (result.code !== code) {
    throw new Error(
      `expected exit ${code}, got ${result.code ?? result.signal}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`,
    );
  }
}
