import ignore, { type Ignore } from "ignore";
import picomatch from "picomatch";
import { z } from "zod";
import { isValidComponent } from "../../workspace/boundary.js";
import { WorkspaceError, type WorkspaceFs } from "../../workspace/fs.js";
import { compareCodeUnits } from "../../workspace/order.js";
import { ToolError } from "../errors.js";
import { defineTool, type ToolContext, type ToolDefinition, type ToolOutput } from "../tool.js";
import { isValidUtf8, PATH_RULES, plural, readsFiles, throwIfAborted, viaWorkspace } from "./common.js";
import { LineMatcher } from "./line-matcher.js";

export const GREP_DEFAULT_RESULTS = 200;
export const GREP_MAX_RESULTS = 2000;
/** Characters of a matching line shown before it is cut. */
export const GREP_LINE_CHARS = 500;
/** A NUL byte this early marks a file as binary (as git and ripgrep do). */
const BINARY_SNIFF_BYTES = 8 * 1024;
/** Larger files are skipped: grep reads each file whole. */
export const GREP_MAX_FILE_BYTES = 8 * 1024 * 1024;
const LINE_CUT_MARKER = " … [cut]";

export const grepInput = z.strictObject({
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
    .describe(`Most matching lines to return; default ${GREP_DEFAULT_RESULTS}, at most ${GREP_MAX_RESULTS}.`),
});

export type GrepArgs = z.infer<typeof grepInput>;

export interface GrepOptions {
  /** Longest time one file's lines may take to match (see line-matcher.ts). */
  matchBudgetMs?: number;
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
      "nested), skips .git, .harness, binary files (a NUL byte in the first 8 KiB), files that are not",
      `valid UTF-8 and files over ${GREP_MAX_FILE_BYTES / (1024 * 1024)} MiB; symbolic links to directories are not followed.`,
      "Files the permission policy does not let read_file read (denied, or needing an approval not yet given)",
      "are not searched; the output says how many.",
      `Returns at most max_results lines (default ${GREP_DEFAULT_RESULTS}); the last line then gives the total.`,
      "Returns '(no matches)' when nothing matches. Fails with INVALID_REGEX for a bad pattern, REGEX_TOO_SLOW",
      "for one that backtracks too long on some file, NOT_FOUND",
      "when `path` does not exist, and PATH_ESCAPE/INVALID_PATH/RESERVED_PATH for rejected paths.",
    ].join(" "),
    input: grepInput,
    timeoutMs: 120_000,
    validate(args) {
      compileRegex(args.pattern, args.ignore_case === true);
    },
    async execute(args, context) {
      const regex = compileRegex(args.pattern, args.ignore_case === true);
      const included = includeMatcher(args.include);
      // Started first, so the worker boots while the files are listed.
      const matcher = new LineMatcher(regex.source, regex.flags, options.matchBudgetMs);
      try {
        return await search(args, context, included, matcher);
      } finally {
        await matcher.close();
      }
    },
  });
}

async function search(
  args: GrepArgs,
  context: ToolContext,
  included: (path: string) => boolean,
  matcher: LineMatcher,
): Promise<ToolOutput> {
  const maxResults = args.max_results ?? GREP_DEFAULT_RESULTS;
  const start = await viaWorkspace(() => context.fs.resolve(args.path ?? "."));
  const stat = await viaWorkspace(() => context.fs.stat(start));
  if (stat === undefined)
    throw new ToolError("NOT_FOUND", `${start} does not exist`, { data: { path: start } });

  let candidates: string[];
  if (stat.kind === "directory") {
    const rules = await ancestorRules(context.fs, start);
    candidates = await viaWorkspace(() => listFiles(context.fs, start, rules, context.signal));
  } else {
    candidates = [start];
  }
  candidates = candidates.filter(included).sort(compareCodeUnits);
  // A search must not reveal what read_file could not: files the policy denies, or whose read
  // needs an approval nobody has given yet (secret files by default), are not searched.
  const { readable, withheld } = await readableFiles(candidates, context);
  candidates = readable;

  const shown: string[] = [];
  let total = 0;
  let files = 0;
  let skipped = 0;
  for (const file of candidates) {
    throwIfAborted(context.signal);
    const text = await readText(context.fs, file);
    if (text === undefined) {
      skipped++;
      continue;
    }
    const matches = await matcher.match(text, maxResults - shown.length, context.signal);
    for (const [index, line] of matches.shown) shown.push(`${file}:${index + 1}:${cutLine(line)}`);
    total += matches.total;
    if (matches.total > 0) files++;
  }

  const truncated = total > shown.length;
  const lines = total === 0 ? ["(no matches)"] : shown;
  if (truncated) {
    lines.push(
      `(showing the first ${shown.length} of ${total} matching lines in ${plural(files, "file")}; narrow the ` +
        `pattern, path or include, or raise max_results up to ${GREP_MAX_RESULTS})`,
    );
  }
  if (skipped > 0) lines.push(`(${plural(skipped, "file")} skipped: binary, not UTF-8 or too large)`);
  if (withheld > 0) {
    lines.push(
      `(${plural(withheld, "file")} not searched: the policy does not let read_file read ${withheld === 1 ? "it" : "them"} ` +
        "without an approval)",
    );
  }
  return {
    summary: `grep ${args.pattern}: ${plural(total, "match", "matches")} in ${plural(files, "file")}`,
    content: lines.join("\n"),
    data: {
      total,
      files,
      truncated,
      skipped_files: skipped,
      ...(withheld > 0 ? { withheld_files: withheld } : {}),
    },
  };
}

/** The candidates read_file may read now; the others are only counted. */
async function readableFiles(
  candidates: readonly string[],
  context: ToolContext,
): Promise<{ readable: string[]; withheld: number }> {
  const access = context.readAccess;
  if (access === undefined) return { readable: [...candidates], withheld: 0 };
  const readable: string[] = [];
  for (const file of candidates) {
    throwIfAborted(context.signal);
    if ((await access(file)) === "allowed") readable.push(file);
  }
  return { readable, withheld: candidates.length - readable.length };
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

interface IgnoreRules {
  /** Directory the .gitignore lives in ("." for the root). */
  base: string;
  rules: Ignore;
}

/** Whether `path` (with a trailing "/" for directories) is ignored; the deepest decisive rule wins. */
function isIgnored(path: string, stack: readonly IgnoreRules[]): boolean {
  for (let i = stack.length - 1; i >= 0; i--) {
    const { base, rules } = stack[i] as IgnoreRules;
    const relative = base === "." ? path : path.slice(base.length + 1);
    const result = rules.test(relative);
    if (result.ignored) return true;
    if (result.unignored) return false;
  }
  return false;
}

/** The .gitignore files of the directories above a search that starts below the root. */
async function ancestorRules(fs: WorkspaceFs, start: string): Promise<IgnoreRules[]> {
  if (start === ".") return [];
  const parts = start.split("/");
  const stack: IgnoreRules[] = [];
  for (let i = 0; i < parts.length; i++) {
    const dir = i === 0 ? "." : parts.slice(0, i).join("/");
    const rules = await loadGitignore(fs, dir);
    if (rules !== undefined) stack.push(rules);
  }
  return stack;
}

async function loadGitignore(fs: WorkspaceFs, dir: string): Promise<IgnoreRules | undefined> {
  const text = await readText(fs, dir === "." ? ".gitignore" : `${dir}/.gitignore`);
  return text === undefined ? undefined : { base: dir, rules: ignore().add(text) };
}

/** Files below `dir` through readDir, so it behaves the same on every WorkspaceFs. */
async function listFiles(
  fs: WorkspaceFs,
  dir: string,
  inherited: readonly IgnoreRules[],
  signal: AbortSignal,
): Promise<string[]> {
  throwIfAborted(signal);
  const entries = await fs.readDir(dir);
  const own = entries.some((entry) => entry.name === ".gitignore") ? await loadGitignore(fs, dir) : undefined;
  const stack = own === undefined ? inherited : [...inherited, own];
  const files: string[] = [];
  for (const entry of entries) {
    // Names no tool could address (e.g. a Windows device name created on Linux) are skipped.
    if (!isValidComponent(entry.name)) continue;
    const path = dir === "." ? entry.name : `${dir}/${entry.name}`;
    if (entry.kind === "directory") {
      if (entry.name === ".git" || isIgnored(`${path}/`, stack)) continue;
      files.push(...(await listFiles(fs, path, stack, signal)));
    } else if (entry.kind === "file") {
      if (!isIgnored(path, stack)) files.push(path);
    } else if (entry.kind === "symlink" && !isIgnored(path, stack)) {
      // A link to a file inside the workspace is searched; links to directories are not followed,
      // and links that leave the workspace fail the boundary check and are skipped.
      const target = await fs.stat(path).catch((error: unknown) => {
        if (error instanceof WorkspaceError) return undefined;
        throw error;
      });
      if (target?.kind === "file") files.push(path);
    }
  }
  return files;
}

/** A file's text, or undefined when it is binary, not UTF-8, too large or unreadable. */
async function readText(fs: WorkspaceFs, path: string): Promise<string | undefined> {
  try {
    const stat = await fs.stat(path);
    if (stat?.kind !== "file" || stat.size > GREP_MAX_FILE_BYTES) return undefined;
    const bytes = await fs.readFile(path);
    if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0) || !isValidUtf8(bytes)) return undefined;
    return new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
  } catch (error) {
    if (error instanceof WorkspaceError) return undefined;
    throw error;
  }
}

function cutLine(line: string): string {
  if (line.length <= GREP_LINE_CHARS) return line;
  let end = GREP_LINE_CHARS;
  const code = line.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return line.slice(0, end) + LINE_CUT_MARKER;
}
