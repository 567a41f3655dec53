import type { Subject } from "../runtime/ports.js";
import { WorkspaceError, type WorkspaceFs } from "../workspace/fs.js";

/**
 * Where a workspace path really leads: its canonical workspace-relative form with symlinks
 * resolved, or undefined when it cannot be resolved (the file tools refuse such paths anyway).
 */
export type PathResolver = (path: string) => Promise<string | undefined>;

/** A PathResolver over a workspace: `fs.resolve`, with boundary failures as undefined. */
export function pathResolverOf(fs: Pick<WorkspaceFs, "resolve">): PathResolver {
  return async (path) => {
    try {
      return await fs.resolve(path);
    } catch (error) {
      if (error instanceof WorkspaceError) return undefined;
      throw error;
    }
  };
}

/** The names a path subject goes by: what its symlinks resolve to (an empty list for other kinds). */
export async function aliasesOf(subject: Subject, resolvePath: PathResolver | undefined): Promise<string[]> {
  if (subject.kind !== "path" || resolvePath === undefined) return [];
  const resolved = await resolvePath(subject.value);
  return resolved === undefined || resolved === subject.value ? [] : [resolved];
}
