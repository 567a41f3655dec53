import path from "node:path";
import { Executor, type ProcessProfile } from "../../../sandbox/executor.js";
import { NoSandbox } from "../../../sandbox/none.js";
import { ToolError } from "../../errors.js";
import { isExecutable, programOutside } from "../../shell/locate.js";
import { GREP_MAX_FILE_BYTES } from "./text.js";

/**
 * ripgrep as a pre-filter: which files contain a literal. grep hands rg only a literal every match
 * must contain (literal.ts), never the model's regular expression, because rg's regex dialect is
 * not JavaScript's; a file rg names is then searched by the JavaScript matcher like any other, and
 * files rg does not name cannot match. So rg must never leave out a file that could match: it
 * searches every file as text (`-a`, no transcoding, no BOM handling) and applies fewer ignore
 * rules than grep does (no .ignore/.rgignore, no global or parent ignore files), and what it names
 * is only kept when grep's own listing has it (gitignore rules, .harness, the read policy).
 *
 * rg starts through the process executor (filtered environment, its own process group, killed
 * with its tree on cancellation) without an OS sandbox: harness picks its arguments, the model
 * only supplies the literal and a name filter, which rg takes as data after `-e` and `-g`.
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
  literal: string;
  ignoreCase: boolean;
  /** A glob on file names (no "/"), passed on as a pre-filter; grep still applies its own. */
  nameGlob?: string;
  signal: AbortSignal;
}

/** Workspace-relative paths of the files below `start` that contain the literal (unsorted). */
export async function filesContaining(query: RipgrepQuery): Promise<string[]> {
  const argv = [
    query.rg,
    "--no-config",
    "--files-with-matches",
    "--null",
    "--no-messages",
    "--hidden",
    "--text",
    "--encoding=none",
    "--no-ignore-dot",
    "--no-ignore-exclude",
    "--no-ignore-global",
    "--no-ignore-parent",
    "--no-require-git",
    `--max-filesize=${GREP_MAX_FILE_BYTES}`,
    "--fixed-strings",
    ...(query.ignoreCase ? ["--ignore-case"] : ["--case-sensitive"]),
    "--glob=!.git",
    "--glob=!/.harness",
    ...(query.nameGlob === undefined ? [] : [`--glob=${query.nameGlob}`]),
    "-e",
    query.literal,
    "--",
    query.start === "." ? "./" : `./${query.start}`,
  ];
  return parsePaths(await runRipgrep(argv, query.root, query.signal));
}

/**
 * Every file below `start` (workspace-relative, unsorted) as `rg --files` lists it: no ignore file
 * of any kind applies, hidden files are listed, and symbolic links are neither listed nor followed
 * (rg only lists regular files and, without `--follow`, never enters a linked directory). `start`
 * must already be the canonical (symlink-free) directory: rg does follow a link given as its root.
 */
export async function listFiles(
  query: Omit<RipgrepQuery, "literal" | "ignoreCase" | "nameGlob">,
): Promise<string[]> {
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

function cancelled(): ToolError {
  return new ToolError("CANCELLED", "the call was cancelled");
}
