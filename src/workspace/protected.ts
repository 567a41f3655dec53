import { quote } from "./boundary.js";
import { RESERVED_DIR, WorkspaceError } from "./fs.js";

/**
 * The one list of workspace paths the agent may read but never change, by any tool: files the
 * host runs or obeys later without asking anyone. The file tools refuse to write them
 * (PROTECTED_PATH) and the shell sandbox mounts them read-only (src/sandbox/bwrap.ts).
 *
 * Names are compared case-insensitively: on a case-insensitive file system `.GIT/config` is
 * `.git/config`, and refusing the alias everywhere keeps the rule the same on every host.
 */

/** The project config file at the workspace root. */
export const PROJECT_CONFIG_NAME = "harness.config.json";
/** A git repository's metadata directory (or `gitdir:` file), at any depth. */
export const GIT_DIR_NAME = ".git";
/**
 * The file that, next to `objects/` and `refs/`, makes a directory a bare repository to git: git
 * run in a directory without `.git` that holds all three obeys its `config` (`core.worktree` plus
 * `core.fsmonitor` runs a command on `git status`). Protected at any depth.
 */
export const BARE_HEAD_NAME = "HEAD";

export type ProtectionKind = "harness_state" | "git_metadata" | "project_config" | "config_named_file";

export interface ProtectionRule {
  kind: ProtectionKind;
  /** Which paths, in words. */
  paths: string;
  /** Why the agent must not change them. */
  reason: string;
}

/** What is protected and why; the docs (docs/security.md, "Protected paths") repeat this list. */
export const PROTECTION_RULES: readonly ProtectionRule[] = [
  {
    kind: "harness_state",
    paths: `${RESERVED_DIR}/ at the workspace root`,
    reason: "harness's own state (journals, locks, artifacts); resume and apply trust it",
  },
  {
    kind: "git_metadata",
    paths: `every ${GIT_DIR_NAME} entry at any depth (directory or gitdir file) and everything below it, and every file named ${BARE_HEAD_NAME} (with objects/ and refs/ it makes a directory a bare repository)`,
    reason:
      "git on the host runs hooks and obeys config (core.fsmonitor, core.hooksPath, aliases, filters) from it without asking",
  },
  {
    kind: "project_config",
    paths: `${PROJECT_CONFIG_NAME} at the workspace root`,
    reason: "it sets permissions, hooks and the sandbox of the next run",
  },
  {
    kind: "config_named_file",
    paths: "every file a config names inside the workspace (hook commands and hook modules)",
    reason: "harness runs them on the host",
  },
];

export interface Protection {
  kind: ProtectionKind;
  reason: string;
}

/**
 * The protected set of one workspace: the fixed rules plus the files the loaded configs name.
 * Immutable; `withFiles` returns a new set.
 */
export class ProtectedPaths {
  /** Config-named files, as lower-cased workspace-relative POSIX paths. */
  readonly #files: ReadonlySet<string>;
  /** The same files as given (for the sandbox, which needs the real spelling). */
  readonly files: readonly string[];

  constructor(files: readonly string[] = []) {
    this.files = [...new Set(files)].sort();
    this.#files = new Set(this.files.map((file) => file.toLowerCase()));
  }

  withFiles(files: readonly string[]): ProtectedPaths {
    return new ProtectedPaths([...this.files, ...files]);
  }

  /** Why the workspace-relative path (as components) is protected, or undefined when it is not. */
  protectionOf(parts: readonly string[]): Protection | undefined {
    const lower = parts.map((part) => part.toLowerCase());
    const rule = (kind: ProtectionKind): Protection => ({
      kind,
      reason: PROTECTION_RULES.find((r) => r.kind === kind)!.reason,
    });
    if (lower[0] === RESERVED_DIR) return rule("harness_state");
    if (lower.includes(GIT_DIR_NAME) || lower.at(-1) === BARE_HEAD_NAME.toLowerCase())
      return rule("git_metadata");
    if (lower.length === 1 && lower[0] === PROJECT_CONFIG_NAME) return rule("project_config");
    if (this.#files.has(lower.join("/"))) return rule("config_named_file");
    return undefined;
  }

  /**
   * Refuse a write when any of the given spellings of the target is protected: the path as the
   * caller wrote it and where it really leads (through symlinks), so neither an alias nor a
   * symlink reaches a protected file. Throws WorkspaceError PROTECTED_PATH.
   */
  assertWritable(original: string, ...spellings: readonly (readonly string[])[]): void {
    for (const parts of spellings) {
      const protection = this.protectionOf(parts);
      if (protection === undefined) continue;
      const shown = parts.join("/");
      const via = shown.toLowerCase() === original.toLowerCase() ? "" : ` (it leads to ${quote(shown)})`;
      throw new WorkspaceError(
        "PROTECTED_PATH",
        original,
        `${quote(original)} is protected${via}: ${protection.reason}`,
      );
    }
  }
}

/** The fixed rules with no config-named files. */
export const DEFAULT_PROTECTED_PATHS = new ProtectedPaths();
