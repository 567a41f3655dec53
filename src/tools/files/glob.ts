import { z } from "zod";
import { defineTool, type ToolContext, type ToolDefinition } from "../tool.js";
import { PATH_RULES, plural, readsFiles, viaWorkspace } from "./common.js";

/** Most paths one glob call lists. */
export const GLOB_MAX_RESULTS = 500;

export const globInput = z.strictObject({
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
});

export type GlobArgs = z.infer<typeof globInput>;

export function createGlobTool(): ToolDefinition<GlobArgs> {
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
    input: globInput,
    timeoutMs: 60_000,
    async execute(args, context) {
      const options = args.path === undefined ? {} : { cwd: args.path };
      const found = await viaWorkspace(() => context.fs.glob(args.pattern, options));
      // Names are not content: a file whose read needs an approval (e.g. .env) is listed, so the
      // model can ask for it; a file the policy denies to read_file is not even named.
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

async function listable(paths: readonly string[], context: ToolContext): Promise<string[]> {
  const access = context.readAccess;
  if (access === undefined) return [...paths];
  const shown: string[] = [];
  for (const path of paths) if ((await access(path)) !== "denied") shown.push(path);
  return shown;
}
