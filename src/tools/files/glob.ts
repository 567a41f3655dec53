import { z } from "zod";
import { once } from "../../shared/lazy-record.js";
import { DiskWorkspaceFs } from "../../workspace/disk-fs.js";
import { WorkspaceError } from "../../workspace/fs.js";
import { ToolError } from "../errors.js";
import { INPUT_SCHEMAS } from "../input-schemas.generated.js";
import { defineTool, type ToolContext, type ToolDefinition } from "../tool.js";
import { PATH_RULES, plural, readsFiles, viaWorkspace } from "./common.js";
import { globViaRipgrep } from "./glob-ripgrep.js";
import { locateRipgrep } from "./search/ripgrep.js";

/** Most paths one glob call lists. */
export const GLOB_MAX_RESULTS = 500;

const globInput = once(() =>
  z.strictObject({
    pattern: z
      .string()
      .min(1)
      .describe(
        "Glob pattern relative to `path` (or the workspace root), e.g. **/*.ts or src/*.{js,json}. " +
          "'*' stays within one directory, '**' crosses directories. No absolute paths, '..', '\\' or leading '!'.",
      ),
    path: z
      .string()
      .min(1)
      .optional()
      .describe(`Directory to search in; default the workspace root. ${PATH_RULES}`),
  }),
);

export type GlobArgs = z.infer<ReturnType<typeof globInput>>;

/**
 * How the files are listed: `auto` lets `rg --files` walk the tree when rg is installed and the
 * workspace is a directory on disk (falling back to the workspace's own crawl when rg fails),
 * `javascript` always crawls, `ripgrep` requires rg (for tests that must exercise it).
 */
export type GlobEngine = "auto" | "javascript" | "ripgrep";

export interface GlobOptions {
  engine?: GlobEngine;
  /** rg's absolute path; default the one on PATH (looked up once per process). */
  ripgrepPath?: string;
}

export function createGlobTool(options: GlobOptions = {}): ToolDefinition<GlobArgs> {
  return defineTool<GlobArgs>({
    ...readsFiles(),
    name: "glob",
    description: [
      "Find files in the workspace by name pattern. Use it to discover which files exist before reading",
      "them, instead of shell commands such as ls or find; to search file contents use grep.",
      "Returns matching file paths (files only, including dot-files), one per line, relative to the",
      "workspace root with '/' separators and sorted by code unit, or '(no matches)'. Symbolic links are",
      "neither listed nor followed, and the .harness directory is never listed. Files the permission policy",
      "denies to read_file are not listed.",
      `At most ${GLOB_MAX_RESULTS} paths are returned; the last line then says how many matched in total.`,
      "Fails with PATH_ESCAPE/INVALID_PATH/RESERVED_PATH for rejected patterns or paths, and NOT_FOUND",
      "when `path` does not exist.",
    ].join(" "),
    get input() {
      return globInput();
    },
    modelSchema: INPUT_SCHEMAS.glob,
    timeoutMs: 60_000,
    async execute(args, context) {
      const found = await viaWorkspace(() => list(args, context, options));
      // Names are not content: a file whose read needs an approval (e.g. .env) is listed, so the
      // model can ask for it; a file the policy denies to read_file is not even named. Only the
      // matches are checked, not every listed file: unlike grep (which counts the files it did
      // not search, over all candidates, so the count says nothing about their content), glob
      // never says how many paths it left out, so checking fewer paths reveals nothing more.
      const paths = await listable(found, context);
      const total = paths.length;
      const truncated = total > GLOB_MAX_RESULTS;
      const shown = paths.slice(0, GLOB_MAX_RESULTS);
      const lines = total === 0 ? ["(no matches)"] : shown;
      if (truncated) {
        lines.push(`(showing the first ${GLOB_MAX_RESULTS} of ${total} matches; narrow the pattern or path)`);
      }
      return {
        summary: `glob ${args.pattern}: ${plural(total, "match", "matches")}`,
        content: lines.join("\n"),
        data: { pattern: args.pattern, total, truncated },
      };
    },
  });
}

async function list(args: GlobArgs, context: ToolContext, options: GlobOptions): Promise<string[]> {
  const engine = options.engine ?? "auto";
  const rg = engine === "javascript" ? undefined : (options.ripgrepPath ?? locateRipgrep());
  if (rg === undefined && engine === "ripgrep") throw new Error("glob engine ripgrep: rg is not on PATH");
  if (rg !== undefined && context.fs instanceof DiskWorkspaceFs) {
    try {
      return await globViaRipgrep(context.fs, rg, args.pattern, args.path ?? ".", context.signal);
    } catch (error) {
      // When rg cannot answer (it crashed, could not start), `auto` crawls instead; a rejected
      // pattern or path, or a cancellation, is the answer.
      const answer = error instanceof WorkspaceError || error instanceof ToolError;
      if (answer || engine === "ripgrep") throw error;
    }
  }
  const cwd = args.path === undefined ? {} : { cwd: args.path };
  return context.fs.glob(args.pattern, cwd);
}

async function listable(paths: readonly string[], context: ToolContext): Promise<string[]> {
  const access = context.readAccess;
  if (access === undefined) return [...paths];
  const shown: string[] = [];
  for (const path of paths) if ((await access(path)) !== "denied") shown.push(path);
  return shown;
}
