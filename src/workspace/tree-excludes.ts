/**
 * Which paths the workspace record leaves out: the root's `.git/` and `.harness/` always (the
 * repository's internals, sealed read-only from the start, and harness's own state), plus what
 * the user configured. A `.git` or `.harness` directory below the root is recorded like any other
 * directory: a session can make one and put anything in it. Never `.gitignore`: an ignored file
 * changed by a command is still a change (`npm install` writing node_modules is recorded unless
 * the user excludes `node_modules/`).
 *
 * A pattern ending in `/` names directories, one without names files and directories. A pattern
 * without an inner `/` matches that name at any depth (`node_modules/`); one with an inner `/`,
 * or starting with `/`, matches that path from the root (`build/out/`, `/.git/`). No wildcards.
 * Sessions recorded before list `.git/` and `.harness/` (any depth): read back, they keep that
 * meaning.
 */
export const ALWAYS_EXCLUDED = ["/.git/", "/.harness/"] as const;

export class TreeExcludes {
  /** Every pattern in effect, the fixed ones first (what `workspace.base` records as `excluded`). */
  readonly patterns: readonly string[];
  private readonly dirNames = new Set<string>();
  private readonly names = new Set<string>();
  private readonly dirPaths = new Set<string>();
  private readonly paths = new Set<string>();

  constructor(configured: readonly string[]) {
    const all = [
      ...ALWAYS_EXCLUDED,
      ...configured.filter((p) => !(ALWAYS_EXCLUDED as readonly string[]).includes(p)),
    ];
    this.patterns = all;
    for (const raw of all) {
      const dirOnly = raw.endsWith("/");
      const pattern = raw.replace(/^\/+|\/+$/g, "");
      if (pattern === "") continue;
      const anyDepth = !pattern.includes("/") && !raw.startsWith("/");
      if (anyDepth) (dirOnly ? this.dirNames : this.names).add(pattern);
      else (dirOnly ? this.dirPaths : this.paths).add(pattern);
    }
  }

  /** Whether the walk skips the directory at `rel` (its last segment `name`). */
  excludesDir(rel: string, name: string): boolean {
    return this.dirNames.has(name) || this.names.has(name) || this.dirPaths.has(rel) || this.paths.has(rel);
  }

  /** Whether the file or symlink at `rel` is left out (its directories are checked by the walk). */
  excludesFile(rel: string, name: string): boolean {
    return this.names.has(name) || this.paths.has(rel);
  }

  /** Whether `rel` is excluded if it is a directory. */
  excludesDirPath(rel: string): boolean {
    return this.excludesDir(rel, rel.slice(rel.lastIndexOf("/") + 1));
  }

  /** Whether any part of `rel` is excluded: for changes reported by a tool rather than found by a walk. */
  excludes(rel: string): boolean {
    const segments = rel.split("/");
    for (let i = 0; i < segments.length; i++) {
      const prefix = segments.slice(0, i + 1).join("/");
      const name = segments[i] as string;
      if (i < segments.length - 1 ? this.excludesDir(prefix, name) : this.excludesFile(prefix, name))
        return true;
    }
    return false;
  }
}
