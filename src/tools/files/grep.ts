import { existsSync } from "node:fs";
import picomatch from "picomatch";
import { z } from "zod";
import { once } from "../../shared/lazy-record.js";
import { globWildcardProblem } from "../../workspace/boundary.js";
import { DiskWorkspaceFs } from "../../workspace/disk-fs.js";
import { WorkspaceError, type WorkspaceFs } from "../../workspace/fs.js";
import { compareCodeUnits } from "../../workspace/order.js";
import { ToolError } from "../errors.js";
import { INPUT_SCHEMAS } from "../input-schemas.generated.js";
import { defineTool, type ToolContext, type ToolDefinition, type ToolOutput } from "../tool.js";
import { PATH_RULES, plural, readsFiles, throwIfAborted, viaWorkspace } from "./common.js";
import { wholeLiteral } from "./search/literal.js";
import { pauser } from "./search/pause.js";
import {
  BATCH_FILES,
  type BatchFile,
  DEFAULT_MATCH_BUDGET_MS,
  type FileMatches,
  type MatchJob,
  matcherPool,
} from "./search/pool.js";
import { ripgrepPattern } from "./search/rg-pattern.js";
import {
  excludeGlob,
  filesMatching,
  filesMatchingBelow,
  locateRipgrep,
  RipgrepRefusedPattern,
} from "./search/ripgrep.js";
import { GREP_MAX_FILE_BYTES } from "./search/text.js";
import { type Candidates, listCandidates } from "./search/walk.js";

export { GREP_MAX_FILE_BYTES } from "./search/text.js";

export const GREP_DEFAULT_RESULTS = 200;
export const GREP_MAX_RESULTS = 2000;
/** Characters of a matching line shown before it is cut. */
export const GREP_LINE_CHARS = 500;
const LINE_CUT_MARKER = " … [cut]";

const grepInput = once(() =>
  z.strictObject({
    pattern: z
      .string()
      .min(1)
      .describe("JavaScript regular expression searched for in each line, e.g. function\\s+main or TODO."),
    path: z
      .string()
      .min(1)
      .optional()
      .describe(`File or directory to search; default the whole workspace. ${PATH_RULES}`),
    include: z
      .string()
      .min(1)
      .optional()
      .describe(
        "Only search files matching this glob, e.g. *.ts (without '/': matched against the file name) or " +
          "src/**/*.ts (with '/': matched against the workspace-relative path).",
      ),
    ignore_case: z.boolean().optional().describe("Match letters case-insensitively. Default false."),
    max_results: z
      .number()
      .int()
      .min(1)
      .max(GREP_MAX_RESULTS)
      .optional()
      .describe(
        `Most matching lines to return; default ${GREP_DEFAULT_RESULTS}, at most ${GREP_MAX_RESULTS}.`,
      ),
  }),
);

export type GrepArgs = z.infer<ReturnType<typeof grepInput>>;

/**
 * How files are found that may match: `auto` uses ripgrep when it is installed and the workspace
 * is a directory on disk, `javascript` never does (the fallback, and what tests force to compare
 * both), `ripgrep` requires it (a test that must exercise it fails when rg is missing).
 */
export type GrepEngine = "auto" | "javascript" | "ripgrep";

export interface GrepOptions {
  /** Longest time one batch of a few files may take to match (see search/pool.ts). */
  matchBudgetMs?: number;
  engine?: GrepEngine;
  /** rg's absolute path; default the one on PATH (looked up once per process). */
  ripgrepPath?: string;
  /** When rg walks the tree for the rest of the files (tests make it happen on small trees). */
  treeSearch?: { afterFiles?: number; minFiles?: number };
}

export function createGrepTool(options: GrepOptions = {}): ToolDefinition<GrepArgs> {
  return defineTool<GrepArgs>({
    ...readsFiles(),
    name: "grep",
    description: [
      "Search file contents in the workspace with a JavaScript regular expression, line by line. Use it to",
      "find where something is defined or used, instead of shell commands such as grep or rg; to find files",
      "by name use glob. Returns one line per match as `path:line:text`, files in sorted order and lines",
      `ascending; lines longer than ${GREP_LINE_CHARS} characters are cut. Respects .gitignore files (root and`,
      "nested), skips .git, .harness and files over",
      `${GREP_MAX_FILE_BYTES / (1024 * 1024)} MiB; symbolic links to directories are not followed. Binary files (a NUL byte in the first`,
      "8 KiB) and files that are not valid UTF-8 are not shown; the output says how many of them would match.",
      "Files the permission policy does not let read_file read (denied, or needing an approval not yet given)",
      "are not searched; the output says how many.",
      `Returns at most max_results lines (default ${GREP_DEFAULT_RESULTS}); the last line then says more matched`,
      "(with the total when every file was searched; a large tree is not searched past the limit).",
      "Returns '(no matches)' when nothing matches. Fails with INVALID_REGEX for a bad pattern, REGEX_TOO_SLOW",
      "for one that backtracks too long on some file, NOT_FOUND",
      "when `path` does not exist, and PATH_ESCAPE/INVALID_PATH/RESERVED_PATH for rejected paths.",
    ].join(" "),
    get input() {
      return grepInput();
    },
    modelSchema: INPUT_SCHEMAS.grep,
    timeoutMs: 120_000,
    validate(args) {
      compileRegex(args.pattern, args.ignore_case === true);
    },
    async execute(args, context) {
      const regex = compileRegex(args.pattern, args.ignore_case === true);
      return search(args, context, includeMatcher(args.include), regex, options);
    },
  });
}

async function search(
  args: GrepArgs,
  context: ToolContext,
  included: (path: string) => boolean,
  regex: RegExp,
  options: GrepOptions,
): Promise<ToolOutput> {
  const maxResults = args.max_results ?? GREP_DEFAULT_RESULTS;
  const ignoreCase = args.ignore_case === true;
  const start = await viaWorkspace(() => context.fs.resolve(args.path ?? "."));
  const stat = await viaWorkspace(() => context.fs.stat(start));
  if (stat === undefined)
    throw new ToolError("NOT_FOUND", `${start} does not exist`, { data: { path: start } });
  // Files on disk are opened by the matcher workers themselves, each confirmed through /proc.
  const root =
    context.fs instanceof DiskWorkspaceFs && existsSync("/proc/self/fd") ? context.fs.hostRoot : undefined;
  // Decided before the listing, so a missing rg in `ripgrep` mode fails at once.
  const filter = ripgrepFilter(args.pattern, ignoreCase, context, options);

  let candidates: string[];
  let links = new Set<string>();
  let skipped: Candidates["skipped"] = { dirs: [], files: [] };
  if (stat.kind === "directory") {
    ({
      files: candidates,
      links,
      skipped,
    } = await viaWorkspace(() => listCandidates(context.fs, start, context.signal)));
  } else {
    candidates = [start];
    links = new Set([start]);
  }
  candidates = candidates.filter(included).sort(compareCodeUnits);
  // A search must not reveal what read_file could not: files the policy denies, or whose read
  // needs an approval nobody has given yet (secret files by default), are not searched, by rg
  // or here. The count covers every listed file, so it says nothing about what they contain.
  const { readable, withheld } = await readableFiles(candidates, links, root, context);

  const literal = ignoreCase ? undefined : wholeLiteral(args.pattern);
  const job: MatchJob = {
    pattern: regex.source,
    flags: regex.flags,
    ...(literal !== undefined ? { literal } : {}),
    limit: maxResults,
    lineChars: GREP_LINE_CHARS,
    ...(root !== undefined ? { root } : {}),
  };
  const budgetMs = options.matchBudgetMs ?? DEFAULT_MATCH_BUDGET_MS;
  const tally = new Tally(maxResults);
  // The files are searched in sorted chunks that grow, rg filtering chunk n + 1 while chunk n is
  // matched here; once more lines matched than can be shown, the rest is never searched and a
  // running rg is killed. A large rest is one chunk that rg finds by walking the directory.
  const below =
    filter !== undefined && stat.kind === "directory" && args.include === undefined
      ? treeExclusions(skipped, withheld, links, readable.length, options)
      : undefined;
  const list = sortedChunks(readable, below === undefined ? undefined : treeAfter(options));
  const filtering = new Set<AbortController>();
  const filterChunk = (chunk: Chunk | undefined): Promise<ChunkFilter> | undefined => {
    if (chunk === undefined || filter === undefined || filter.refused) return undefined;
    const stop = new AbortController();
    filtering.add(stop);
    const signal = AbortSignal.any([context.signal, stop.signal]);
    const found =
      chunk.tree && below !== undefined
        ? filesMatchingBelow({ ...filter.query, start, exclude: below, signal })
        : filesMatching({ ...filter.query, files: chunk.files.filter((file) => !links.has(file)), signal });
    return found.then(
      (paths) => ({ paths: new Set(paths) }),
      (error: unknown) => ({ error }),
    );
  };
  try {
    const filters = new Map<number, Promise<ChunkFilter> | undefined>();
    const filterOf = (index: number): Promise<ChunkFilter> | undefined => {
      if (!filters.has(index)) filters.set(index, filterChunk(list[index]));
      return filters.get(index);
    };
    // rg's walk of the rest starts at once, beside the first chunk's search by name.
    if (list.at(-1)?.tree === true) filterOf(list.length - 1);
    let index = 0;
    for (; index < list.length && !tally.full; index++) {
      const chunk = list[index] as Chunk;
      const answer = await filterOf(index);
      filterOf(index + 1);
      const hits = filter === undefined ? undefined : hitsOf(answer, filter, options, context);
      const files =
        hits === undefined ? chunk.files : chunk.files.filter((file) => hits.has(file) || links.has(file));
      // Matched a slice at a time: the limit can be passed within a large chunk.
      let offset = 0;
      while (offset < files.length && !tally.full) {
        const slice = files.slice(offset, offset + MATCH_SLICE_FILES);
        tally.add(slice, await matchAll(slice, links, root, job, context, budgetMs));
        offset += slice.length;
      }
      if (offset < files.length) {
        tally.stoppedEarly = true;
        break;
      }
    }
    if (index < list.length) tally.stoppedEarly = true;
  } finally {
    for (const stop of filtering) stop.abort();
  }
  return tally.output(args.pattern, withheld.length);
}

/** Where rg filters the files: its binary, the workspace root and the rewritten expression. */
interface RipgrepFilter {
  query: { rg: string; root: string; pattern: string; ignoreCase: boolean };
  /** rg refused the expression: the rest of the call matches in JavaScript alone. */
  refused: boolean;
}

type ChunkFilter = { paths: Set<string> } | { error: unknown } | undefined;

/**
 * How rg takes part: undefined when it does not (the `javascript` engine, rg missing under
 * `auto`, a workspace not on disk, or a pattern rg-pattern.ts cannot rewrite soundly).
 */
function ripgrepFilter(
  pattern: string,
  ignoreCase: boolean,
  context: ToolContext,
  options: GrepOptions,
): RipgrepFilter | undefined {
  const engine = options.engine ?? "auto";
  if (engine === "javascript") return undefined;
  const rg = options.ripgrepPath ?? locateRipgrep();
  if (rg === undefined && engine === "ripgrep") throw new Error("grep engine ripgrep: rg is not on PATH");
  const rewritten = ripgrepPattern(pattern);
  if (rg === undefined || rewritten === undefined || !(context.fs instanceof DiskWorkspaceFs))
    return undefined;
  return { query: { rg, root: context.fs.hostRoot, pattern: rewritten, ignoreCase }, refused: false };
}

/** The chunk's files rg names, or undefined when every file of the chunk must be matched here. */
function hitsOf(
  answer: ChunkFilter,
  filter: RipgrepFilter,
  options: GrepOptions,
  context: ToolContext,
): Set<string> | undefined {
  if (answer === undefined) return undefined;
  if ("paths" in answer) return answer.paths;
  const { error } = answer;
  if (error instanceof RipgrepRefusedPattern) {
    filter.refused = true;
    return undefined;
  }
  throwIfAborted(context.signal);
  // When rg cannot answer (it crashed, could not start), `auto` matches every file of the chunk.
  if (options.engine === "ripgrep" || error instanceof ToolError) throw error;
  return undefined;
}

/** First chunk: small, so a frequent pattern answers after a few hundred files. */
const FIRST_CHUNK_FILES = 256;
const MAX_CHUNK_FILES = 8192;
/** rg takes a chunk's paths as arguments: well under the kernel's limit on their total size. */
const MAX_CHUNK_BYTES = 512 * 1024;
/** Files matched here between two checks of the result limit (within a chunk rg walked for). */
const MATCH_SLICE_FILES = FIRST_CHUNK_FILES;
/**
 * Files searched by name (the first chunk) before the rest is one chunk rg finds by walking the
 * tree: a frequent pattern still answers after the first few hundred files.
 */
const TREE_AFTER_FILES = FIRST_CHUNK_FILES;
/** Fewest files left for that walk to be worth it (it searches the ones before them again). */
const TREE_MIN_FILES = 2048;
/** The excluding globs' share of the command line (the kernel allows 2 MiB with the environment). */
const MAX_EXCLUDE_BYTES = 512 * 1024;

/** Files to search in order; `tree`: rg finds them by walking the directory (see `treeExclusions`). */
interface Chunk {
  files: string[];
  tree: boolean;
}

function sortedChunks(files: readonly string[], treeAfter: number | undefined): Chunk[] {
  const chunks: Chunk[] = [];
  let offset = 0;
  let size = FIRST_CHUNK_FILES;
  while (offset < files.length) {
    if (treeAfter !== undefined && offset >= treeAfter) {
      chunks.push({ files: files.slice(offset), tree: true });
      break;
    }
    const chunk: string[] = [];
    let bytes = 0;
    while (offset < files.length && chunk.length < size && bytes < MAX_CHUNK_BYTES) {
      const file = files[offset++] as string;
      chunk.push(file);
      bytes += Buffer.byteLength(file) + 3;
    }
    chunks.push({ files: chunk, tree: false });
    size = Math.min(size * 4, MAX_CHUNK_FILES);
  }
  return chunks;
}

function treeAfter(options: GrepOptions): number {
  return options.treeSearch?.afterFiles ?? TREE_AFTER_FILES;
}

/**
 * What rg must leave out when it walks the directory for the rest of the files, or undefined when
 * naming the files one by one stays the way: too few files left, or something the walk left out
 * or the policy withheld that no glob can name (or too many of them). rg then reads exactly the
 * files grep would: never one the policy withholds, an ignored one the policy never decided, or
 * one whose name no tool could address. Only without an include, so that every listed file has
 * been decided by the policy and rg searches about what is listed.
 */
function treeExclusions(
  skipped: Candidates["skipped"],
  withheld: readonly string[],
  links: ReadonlySet<string>,
  readable: number,
  options: GrepOptions,
): string[] | undefined {
  const minFiles = options.treeSearch?.minFiles ?? TREE_MIN_FILES;
  if (readable - treeAfter(options) < minFiles) return undefined;
  const globs: string[] = [];
  let bytes = 0;
  const add = (path: string, dir: boolean): boolean => {
    const glob = excludeGlob(path, dir);
    if (glob === undefined) return false;
    // The argument is `--glob=GLOB` and its terminating NUL.
    const size = Buffer.byteLength(glob) + 8;
    if (bytes + size > MAX_EXCLUDE_BYTES) return false;
    globs.push(glob);
    bytes += size;
    return true;
  };
  // rg never searches a link; every other withheld or skipped entry must be named.
  for (const file of withheld) if (!links.has(file) && !add(file, false)) return undefined;
  for (const dir of skipped.dirs) if (!add(dir, true)) return undefined;
  for (const file of skipped.files) if (!add(file, false)) return undefined;
  return globs;
}

/** The lines to show and the counts, folded in file order. */
class Tally {
  readonly shown: string[] = [];
  total = 0;
  files = 0;
  skipped = 0;
  /** Set when files were left unsearched because the limit was passed. */
  stoppedEarly = false;

  constructor(readonly maxResults: number) {}

  /** More lines matched than can be shown: the rest of the files need not be searched. */
  get full(): boolean {
    return this.total > this.maxResults;
  }

  add(files: readonly string[], results: readonly FileMatches[]): void {
    files.forEach((file, index) => {
      const matches = results[index] as FileMatches;
      if (matches.skipped) this.skipped++;
      for (const [line, text] of matches.shown) {
        if (this.shown.length < this.maxResults) this.shown.push(`${file}:${line + 1}:${cutLine(text)}`);
      }
      this.total += matches.total;
      if (matches.total > 0) this.files++;
    });
  }

  output(pattern: string, withheld: number): ToolOutput {
    const { shown, total, files, skipped } = this;
    const truncated = total > shown.length;
    const lines = total === 0 ? ["(no matches)"] : [...shown];
    const narrow = `narrow the pattern, path or include, or raise max_results up to ${GREP_MAX_RESULTS}`;
    if (truncated && this.stoppedEarly) {
      lines.push(
        `(showing the first ${shown.length} matching lines; the search stopped there and more files may match; ${narrow})`,
      );
    } else if (truncated) {
      lines.push(
        `(showing the first ${shown.length} of ${total} matching lines in ${plural(files, "file")}; ${narrow})`,
      );
    }
    if (skipped > 0) {
      lines.push(
        `(${plural(skipped, "more file")} would match but ${skipped === 1 ? "is" : "are"} binary or not UTF-8)`,
      );
    }
    if (withheld > 0) {
      lines.push(
        `(${plural(withheld, "file")} not searched: the policy does not let read_file read ${withheld === 1 ? "it" : "them"} ` +
          "without an approval)",
      );
    }
    const counted = this.stoppedEarly ? `${total}+ matches` : plural(total, "match", "matches");
    return {
      summary: `grep ${pattern}: ${counted} in ${plural(files, "file")}`,
      content: lines.join("\n"),
      data: {
        total,
        files,
        truncated,
        skipped_files: skipped,
        ...(this.stoppedEarly ? { stopped_early: true } : {}),
        ...(withheld > 0 ? { withheld_files: withheld } : {}),
      },
    };
  }
}

/** Files to match above which every worker of the pool takes part. */
const SPREAD_FILES = 4 * BATCH_FILES;

/** Every file matched on the worker pool, a few batches in flight; results in `files` order. */
async function matchAll(
  files: readonly string[],
  links: ReadonlySet<string>,
  root: string | undefined,
  job: MatchJob,
  context: ToolContext,
  budgetMs: number,
): Promise<FileMatches[]> {
  const pool = matcherPool();
  const results: FileMatches[] = new Array(files.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < files.length) {
      const first = next;
      const batch = files.slice(first, first + BATCH_FILES);
      next += batch.length;
      const items: BatchFile[] = [];
      for (const file of batch) {
        throwIfAborted(context.signal);
        items.push(
          root !== undefined && !links.has(file)
            ? { path: file }
            : { bytes: await readBytes(context.fs, file) },
        );
      }
      const answers = await pool.run(job, items, budgetMs, context.signal);
      answers.forEach((answer, offset) => {
        results[first + offset] = answer;
      });
    }
  };
  // A few batches (what rg's filter usually leaves) go through one worker: each further worker
  // is another thread with its own heap and read buffer, tens of megabytes for milliseconds saved.
  const lanes = files.length > SPREAD_FILES ? pool.size + 1 : 1;
  await Promise.all(Array.from({ length: lanes }, lane));
  return results;
}

/** A file's bytes through the workspace; empty when it is too large or unreadable (then it never matches). */
async function readBytes(fs: WorkspaceFs, path: string): Promise<Uint8Array> {
  try {
    const stat = await fs.stat(path);
    if (stat?.kind !== "file" || stat.size > GREP_MAX_FILE_BYTES) return new Uint8Array();
    return await fs.readFile(path);
  } catch (error) {
    if (error instanceof WorkspaceError) return new Uint8Array();
    throw error;
  }
}

/**
 * The candidates read_file may read now; the others are only counted. A file the matcher opens
 * itself (`root` set, not a link) is decided as written: the walk listed it without following a
 * link, and the matcher reads it only if /proc confirms the opened file is exactly at that path,
 * so the policy need not resolve it (a realpath per file). Links, and every file read through
 * the workspace, are decided on where they lead, as read_file would.
 */
async function readableFiles(
  candidates: string[],
  links: ReadonlySet<string>,
  root: string | undefined,
  context: ToolContext,
): Promise<{ readable: string[]; withheld: string[] }> {
  const access = context.readAccess;
  if (access === undefined) return { readable: candidates, withheld: [] };
  const pause = pauser();
  const readable: string[] = [];
  const withheld: string[] = [];
  for (const file of candidates) {
    await pause();
    throwIfAborted(context.signal);
    const canonical = root !== undefined && !links.has(file);
    if ((await access(file, canonical ? { canonical } : undefined)) === "allowed") readable.push(file);
    else withheld.push(file);
  }
  return { readable, withheld };
}

function compileRegex(pattern: string, ignoreCase: boolean): RegExp {
  try {
    return new RegExp(pattern, ignoreCase ? "i" : "");
  } catch (error) {
    const reason = error instanceof Error ? error.message : "invalid pattern";
    throw new ToolError("INVALID_REGEX", `invalid regular expression: ${reason}`);
  }
}

function includeMatcher(include: string | undefined): (path: string) => boolean {
  if (include === undefined) return () => true;
  const wildcards = globWildcardProblem(include);
  if (wildcards !== undefined) throw new ToolError("SEMANTIC_VALIDATION_ERROR", `include: ${wildcards}`);
  try {
    const matches = picomatch(include, { dot: true, posix: true, basename: !include.includes("/") });
    return (path) => matches(path);
  } catch {
    throw new ToolError(
      "SEMANTIC_VALIDATION_ERROR",
      `include is not a valid glob: ${JSON.stringify(include)}`,
    );
  }
}

function cutLine(line: string): string {
  if (line.length <= GREP_LINE_CHARS) return line;
  let end = GREP_LINE_CHARS;
  const code = line.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return line.slice(0, end) + LINE_CUT_MARKER;
}
