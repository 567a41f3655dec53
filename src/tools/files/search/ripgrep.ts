import path from "node:path";
import { Executor, type ProcessProfile } from "../../../sandbox/executor.js";
import { NoSandbox } from "../../../sandbox/none.js";
import { ToolError } from "../../errors.js";
import { isExecutable, programOutside } from "../../shell/locate.js";
import { GREP_MAX_FILE_BYTES } from "./text.js";

/**
 * ripgrep as a sound filter: which of the listed files have a line matching the pattern. grep
 * hands rg its own listing (gitignore rules, .harness and the read policy already applied, in
 * sorted order) and a rewrite of the model's JavaScript expression that matches at least what the
 * RegExp matches (rg-pattern.ts); the files rg names are then matched by the JavaScript matcher,
 * which decides the lines shown. So rg must never leave out a file that could match: it searches
 * every file as text (`-a`, no transcoding, no BOM handling).
 *
 * rg starts through the process executor (filtered environment, its own process group, killed
 * with its tree on cancellation) without an OS sandbox: harness picks its arguments, the model
 * only supplies the pattern, which rg takes as data after `-e`, and file names after `--`.
 */

let candidates: string[] | undefined;

/** Every rg on PATH, in PATH order, looked up once per process. */
function ripgrepsOnPath(): string[] {
  candidates ??= (process.env.PATH ?? "")
    .split(":")
    .filter((d) => path.isAbsolute(d))
    .map((d) => path.join(d, "rg"))
    .filter(isExecutable);
  return candidates;
}

/** rg's absolute path on PATH (the first one); undefined when it is not installed. */
export function locateRipgrep(): string | undefined {
  return ripgrepsOnPath()[0];
}

/**
 * The real path of the rg to start for a workspace at `root`: `rg` itself unless it lies inside
 * the workspace, else the next rg on PATH that does not. rg runs unsandboxed, and one found in a
 * workspace directory on PATH (an activated `.venv/bin`) would be the model's program.
 */
function ripgrepOutside(rg: string, root: string): string | undefined {
  const direct = programOutside(rg, root);
  if (direct !== undefined) return direct;
  for (const candidate of ripgrepsOnPath()) {
    const outside = programOutside(candidate, root);
    if (outside !== undefined) return outside;
  }
  return undefined;
}

const PROFILE: ProcessProfile = { sandbox: new NoSandbox(), env: {} };
let executor: Executor | undefined;

export interface RipgrepQuery {
  rg: string;
  /** Real host path of the workspace root. */
  root: string;
  /** Workspace-relative directory to search ("." for the root). */
  start: string;
  signal: AbortSignal;
}

export interface RipgrepMatchQuery extends Omit<RipgrepQuery, "start"> {
  /** Workspace-relative regular files to search (never symbolic links). */
  files: readonly string[];
  /** An rg expression (see rg-pattern.ts). */
  pattern: string;
  ignoreCase: boolean;
}

/**
 * rg naming the files with a line its expression matches, NUL-separated, each searched whole as
 * text (`-a`, no transcoding, no BOM handling: it must never leave out a file that could match),
 * up to grep's own size limit.
 */
function matchingFiles(ignoreCase: boolean): string[] {
  return [
    "--no-config",
    "--files-with-matches",
    "--null",
    "--no-messages",
    "--text",
    "--encoding=none",
    `--max-filesize=${GREP_MAX_FILE_BYTES}`,
    ignoreCase ? "--ignore-case" : "--case-sensitive",
  ];
}

/** The files of `query.files` with a line rg's expression matches (unsorted). */
export async function filesMatching(query: RipgrepMatchQuery): Promise<string[]> {
  if (query.files.length === 0) return [];
  const argv = [
    query.rg,
    ...matchingFiles(query.ignoreCase),
    "-e",
    query.pattern,
    "--",
    ...query.files.map((file) => `./${file}`),
  ];
  return parsePaths(await runRipgrep(argv, query.root, query.signal));
}

export interface RipgrepTreeQuery extends RipgrepQuery {
  /** An rg expression (see rg-pattern.ts). */
  pattern: string;
  ignoreCase: boolean;
  /** Globs (see `excludeGlob`): what rg must not search. */
  exclude: readonly string[];
}

/**
 * The files below `start` (workspace-relative, unsorted) with a line rg's expression matches, rg
 * walking the directory itself: about twice as fast as the same files named as arguments, which
 * rg searches with less parallelism. No ignore file of the tree applies (the caller's listing
 * decided what is ignored); what rg must leave out is named by one excluding glob a path (on the
 * command line: an ignore file rg cannot read, such as a socket given as /dev/stdin, is
 * skipped without a word under --no-messages). Symbolic links are neither followed nor searched,
 * and `start` must be canonical, as for `listFiles`.
 */
export async function filesMatchingBelow(query: RipgrepTreeQuery): Promise<string[]> {
  const argv = [
    query.rg,
    ...matchingFiles(query.ignoreCase),
    "--hidden",
    "--no-ignore",
    "--no-require-git",
    ...query.exclude.map((glob) => `--glob=${glob}`),
    "-e",
    query.pattern,
    "--",
    query.start === "." ? "./" : `./${query.start}`,
  ];
  return parsePaths(await runRipgrep(argv, query.root, query.signal));
}

/**
 * The rg glob that leaves out exactly this workspace-relative path (a directory with everything
 * below it when `dir`), anchored at the workspace root (rg anchors a glob at its working
 * directory, the root, whatever directory it searches); undefined when no glob can say it
 * safely: a line break, a control character or a name that is not valid UTF-8.
 */
export function excludeGlob(path: string, dir: boolean): string | undefined {
  if (/[\u0000-\u001f\u007f\ufffd]/.test(path)) return undefined;
  // Every glob character is escaped, and every space (a trailing one would be trimmed).
  const escaped = path.replace(/[\\*?[\]{}! ]/g, "\\$&");
  return `!/${escaped}${dir ? "/" : ""}`;
}

/**
 * Every file below `start` (workspace-relative, unsorted) as `rg --files` lists it: no ignore file
 * of any kind applies, hidden files are listed, and symbolic links are neither listed nor followed
 * (rg only lists regular files and, without `--follow`, never enters a linked directory). `start`
 * must already be the canonical (symlink-free) directory: rg does follow a link given as its root.
 */
export async function listFiles(query: RipgrepQuery): Promise<string[]> {
  const argv = [
    query.rg,
    "--no-config",
    "--files",
    "--null",
    "--no-messages",
    "--hidden",
    "--no-ignore",
    "--no-require-git",
    // Only a speed-up: the caller drops reserved paths itself (the check is case-insensitive).
    "--glob=!/.harness",
    "--",
    query.start === "." ? "./" : `./${query.start}`,
  ];
  return parsePaths(await runRipgrep(argv, query.root, query.signal));
}

/** rg's standard output; exit 0 or 1 (nothing found) is an answer, anything else RipgrepFailed. */
async function runRipgrep(argv: string[], root: string, signal: AbortSignal): Promise<Buffer> {
  executor ??= new Executor();
  if (signal.aborted) throw cancelled();
  const program = ripgrepOutside(argv[0]!, root);
  if (program === undefined) throw new RipgrepFailed(`${argv[0]} lies inside the workspace: not run`);
  const { process: rg } = await executor.start({
    // The facts of this start are not journaled (the tool's result is); "shell" is the nearest kind.
    purpose: "shell",
    argv: [program, ...argv.slice(1)],
    workspace: root,
    profile: PROFILE,
  });
  const stop = (): void => void rg.stop(0);
  signal.addEventListener("abort", stop, { once: true });
  try {
    rg.stdin.end();
    const chunks: Buffer[] = [];
    let exit: Awaited<typeof rg.exited>;
    try {
      for await (const chunk of rg.stdout) chunks.push(chunk as Buffer);
      exit = await rg.exited;
    } catch (error) {
      // Stopping rg on cancellation closes its output under the reader.
      if (signal.aborted) throw cancelled();
      throw new RipgrepFailed(`reading rg's output failed: ${String(error)}`);
    }
    if (signal.aborted) throw cancelled();
    // 0: some file matched, 1: none did; anything else (a bad glob, a crash) is not an answer.
    if (exit.code !== 0 && exit.code !== 1) {
      const stderr = await rg.stop(0);
      // rg's dialect refused the expression (an escape it lacks, a size limit): not a failure.
      if (/^regex parse error|regex exceeds size limit|size limit/m.test(stderr.head)) {
        throw new RipgrepRefusedPattern(stderr.head);
      }
      throw new RipgrepFailed(`rg exited with ${exit.code ?? exit.signal}: ${stderr.head}`);
    }
    return Buffer.concat(chunks);
  } finally {
    signal.removeEventListener("abort", stop);
    await rg.stop(0);
  }
}

/** rg's NUL-separated "./path" list; anything not of that form is dropped (it is outside input). */
export function parsePaths(output: Buffer): string[] {
  const paths: string[] = [];
  for (const entry of output.toString("utf8").split("\0")) {
    if (!entry.startsWith("./") || entry.includes("\uFFFD")) continue;
    paths.push(entry.slice(2));
  }
  return paths;
}

/** rg could not answer; the caller searches without it. */
export class RipgrepFailed extends Error {
  override readonly name = "RipgrepFailed";
}

/** rg cannot compile the expression; grep matches it in JavaScript alone. */
export class RipgrepRefusedPattern extends Error {
  override readonly name = "RipgrepRefusedPattern";
}

function cancelled(): ToolError {
  return new ToolError("CANCELLED", "the call was cancelled");
}
