import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, expect } from "vitest";
import { FileArtifactStore } from "../../src/artifacts/file-store.js";
import { createToolContext } from "../../src/tools/context.js";
import { ToolError } from "../../src/tools/errors.js";
import type { ToolContext } from "../../src/tools/tool.js";
import type { WorkspaceFs } from "../../src/workspace/fs.js";

/** A fresh workspace and scratch directory for every test of the calling file, removed after it. */
export function dirsPerTest(prefix: string): { readonly workspace: string; readonly scratch: string } {
  let dirs: { dir: string; cleanup: () => void }[] = [];
  beforeEach(() => {
    dirs = [tempDirectory(`${prefix}-ws-`), tempDirectory(`${prefix}-scratch-`)];
  });
  afterEach(() => {
    for (const { cleanup } of dirs) cleanup();
  });
  return {
    get workspace() {
      return dirs[0]!.dir;
    },
    get scratch() {
      return dirs[1]!.dir;
    },
  };
}

/** The ToolError a promise rejects with (failing the test when it resolves or throws anything else). */
export async function failureOf(promise: Promise<unknown>): Promise<ToolError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}

/** A temp directory for one test; removed by the returned cleanup. */
export function tempDirectory(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The shell tool never touches `fs`; any use is a test failure. */
const unusedFs = new Proxy({} as WorkspaceFs, {
  get(_target, property) {
    if (property === "label") return "test-workspace";
    throw new Error(`the shell tool must not use WorkspaceFs.${String(property)}`);
  },
});

export interface TestContext {
  context: ToolContext;
  artifacts: FileArtifactStore;
  controller: AbortController;
}

export function toolContext(hostRoot: string | undefined, artifactDir: string): TestContext {
  const controller = new AbortController();
  const artifacts = new FileArtifactStore(artifactDir);
  const context = createToolContext({
    callId: `call-${randomUUID()}`,
    signal: controller.signal,
    fs: unusedFs,
    artifacts,
    hostRoot,
  });
  return { context, artifacts, controller };
}

/**
 * Live (non-zombie) `sleep <duration>` processes. Parsed here independently of
 * src/sandbox/proc.ts, so the tests do not trust the code they check.
 */
export function liveSleeps(duration: string): number[] {
  return procPids().filter(
    (pid) => readProc(pid, "cmdline") === `sleep\0${duration}\0` && statFields(pid)?.state !== "Z",
  );
}

/** Live processes of a process group. */
export function liveGroup(pgid: number): number[] {
  return procPids().filter((pid) => {
    const fields = statFields(pid);
    return fields !== undefined && fields.pgid === pgid && fields.state !== "Z";
  });
}

function statFields(pid: number): { state: string; pgid: number } | undefined {
  const match = /\) (\S) -?\d+ (-?\d+) /.exec(readProc(pid, "stat") ?? "");
  return match === null ? undefined : { state: match[1]!, pgid: Number(match[2]) };
}

function readProc(pid: number, file: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/${file}`, "utf8");
  } catch {
    return undefined;
  }
}

function procPids(): number[] {
  return readdirSync("/proc")
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid > 0);
}

/** Poll until `condition` holds or `ms` pass; returns whether it held. A deadline, not a timing claim. */
export async function eventually(condition: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return condition();
}

/** A unique decimal duration for `sleep`, so a test can find its processes by command line. */
export function uniqueSleep(seconds: number): string {
  return `${seconds}.${String(Math.floor(Math.random() * 1e6)).padStart(6, "0")}`;
}

/**
 * Bundle a TypeScript entry point (and the harness sources it imports) into one ESM file that a
 * plain `node` child process can run. Returns the bundle's path.
 */
export async function bundleScript(entry: string, outDirectory: string): Promise<string> {
  const { build } = await import("esbuild");
  const outfile = path.join(outDirectory, `${path.basename(entry, ".ts")}.mjs`);
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outfile,
    logLevel: "silent",
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
  });
  return outfile;
}

/**
 * The stand-in harness process (fixtures/run-shell.ts), bundled into `dirs.scratch`, and the
 * argument that makes it run one shell command in `dirs.workspace`. Callers start it themselves
 * (node flags, another user).
 */
export async function shellStandIn(
  dirs: { readonly workspace: string; readonly scratch: string },
  command: string,
  sandbox: string,
  options: { timeoutMs?: number } = {},
): Promise<{ script: string; argument: string; artifacts: string }> {
  const script = await bundleScript(path.join(import.meta.dirname, "fixtures/run-shell.ts"), dirs.scratch);
  const artifacts = path.join(dirs.scratch, "artifacts");
  const input = { workspace: dirs.workspace, artifacts, command, sandbox, ...options };
  return { script, argument: JSON.stringify(input), artifacts };
}
