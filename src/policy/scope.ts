import type {
  PermissionDecision,
  PermissionPort,
  PermissionRequest,
  Subject,
  SubjectKind,
} from "../runtime/ports.js";
import { CodedError } from "../shared/coded-error.js";
import type { JsonObject } from "../shared/json.js";
import { normalizeRelativePath } from "../workspace/boundary.js";
import { WorkspaceError, type WorkspaceFs } from "../workspace/fs.js";
import { compareCodeUnits } from "../workspace/order.js";
import { aliasesOf, type PathResolver } from "./path-aliases.js";
import type { SubjectKindLookup } from "./policy-permissions.js";
import { subjectOf } from "./rules.js";

/**
 * A task's scope: the files a task may read and the files it may change.
 *
 * Decisions (least privilege, derived from the task):
 * - Paths are EXACT workspace-relative file paths, not globs or directories: a scope is granted
 *   per file, so what a task may touch can be read off the list, and a listed path can be
 *   checked to exist when the task starts.
 * - An edit path must also be listed as a read path (changes are bound to a version that was
 *   read, so an unreadable edit path could never be changed correctly); otherwise the scope is
 *   rejected. Nothing is made readable implicitly.
 * - Searches are reads. A search names a path (grep/glob `path`, default the workspace root);
 *   it is allowed only when that path is a listed file, because a search over a directory would
 *   reveal files outside the scope. To search several files, search each one.
 * - Tools without a path subject that only read (e.g. read_artifact: results of calls already
 *   allowed) and network tools are left to the wrapped policy; commands are denied outright,
 *   since a process can reach any file.
 * The scope only narrows: every call it does not deny is decided by the wrapped policy.
 */
export interface TaskScope {
  readPaths: readonly string[];
  editPaths: readonly string[];
}

export type ScopeProblemCode =
  | "INVALID_PATH"
  | "NOT_FOUND"
  | "NOT_A_FILE"
  | "NOT_CANONICAL"
  | "EDIT_NOT_READABLE";

export interface ScopeProblem {
  code: ScopeProblemCode;
  path: string;
  message: string;
}

/** A scope that cannot be used; the task must not start. Lists every problem found. */
export class ScopeError extends CodedError<ScopeProblemCode> {
  override readonly name = "ScopeError";
  readonly problems: readonly ScopeProblem[];
  constructor(problems: readonly ScopeProblem[]) {
    super(
      (problems[0] as ScopeProblem).code,
      `invalid task scope: ${problems.map((p) => p.message).join("; ")}`,
    );
    this.problems = problems;
  }
}

/** A scope checked against the workspace at task start; only `validateScope` makes one. */
export class ValidatedScope {
  readonly readable: ReadonlySet<string>;
  readonly editable: ReadonlySet<string>;

  private constructor(readable: readonly string[], editable: readonly string[]) {
    this.readable = new Set([...readable].sort(compareCodeUnits));
    this.editable = new Set([...editable].sort(compareCodeUnits));
  }

  /** For the session header: the scope is part of the run's policy. */
  describe(): JsonObject {
    return { read: [...this.readable], edit: [...this.editable] };
  }

  static async check(scope: TaskScope, fs: WorkspaceFs): Promise<ValidatedScope> {
    const problems: ScopeProblem[] = [];
    const readable = await canonicalPaths(scope.readPaths, fs, problems);
    const editable = await canonicalPaths(scope.editPaths, fs, problems);
    for (const path of editable) {
      if (!readable.includes(path)) {
        problems.push({
          code: "EDIT_NOT_READABLE",
          path,
          message: `edit path ${path} is not a read path (an edit path must also be readable: list it in readPaths)`,
        });
      }
    }
    if (problems.length > 0) throw new ScopeError(problems);
    return new ValidatedScope(readable, editable);
  }
}

/**
 * Check a task scope against the workspace when the task starts: every path must be a valid
 * workspace path naming an existing regular file, spelled canonically (no symlink aliases), and
 * every edit path must also be a read path. Throws ScopeError listing every problem.
 */
export function validateScope(scope: TaskScope, fs: WorkspaceFs): Promise<ValidatedScope> {
  return ValidatedScope.check(scope, fs);
}

async function canonicalPaths(paths: readonly string[], fs: WorkspaceFs, problems: ScopeProblem[]) {
  const result: string[] = [];
  for (const raw of paths) {
    let lexical: string;
    let canonical: string;
    try {
      lexical = normalizeRelativePath(raw);
      canonical = await fs.resolve(raw);
    } catch (error) {
      if (!(error instanceof WorkspaceError)) throw error;
      problems.push({ code: "INVALID_PATH", path: raw, message: `${JSON.stringify(raw)}: ${error.message}` });
      continue;
    }
    if (canonical !== lexical) {
      problems.push({
        code: "NOT_CANONICAL",
        path: raw,
        message: `${lexical} is another name for ${canonical} (a symbolic link); list ${canonical} itself`,
      });
      continue;
    }
    const stat = await fs.stat(canonical).catch((error: unknown) => {
      if (error instanceof WorkspaceError) return undefined;
      throw error;
    });
    if (stat === undefined) {
      problems.push({ code: "NOT_FOUND", path: canonical, message: `${canonical} does not exist` });
    } else if (stat.kind !== "file") {
      problems.push({
        code: "NOT_A_FILE",
        path: canonical,
        message: `${canonical} is not a file (a scope lists files, not directories)`,
      });
    } else if (!result.includes(canonical)) {
      result.push(canonical);
    }
  }
  return result;
}

const SCOPE_SOURCE = "task scope";

/** Wraps a policy so that no call reaches outside the task's scope; checked at every call. */
export class ScopedPermissions implements PermissionPort {
  /** `resolvePath`: a symlink is in scope only when the file it leads to is too. */
  constructor(
    private readonly inner: PermissionPort,
    private readonly scope: ValidatedScope,
    private readonly subjectKinds: SubjectKindLookup,
    private readonly resolvePath?: PathResolver,
  ) {}

  deniesOutright(tool: string): boolean {
    return this.inner.deniesOutright?.(tool) ?? false;
  }

  async decide(request: PermissionRequest): Promise<PermissionDecision> {
    const kind = this.subjectKinds(request.tool) ?? "none";
    const subject = subjectOf(request.arguments, kind);
    const resolve = request.canonicalSubject === true ? undefined : this.resolvePath;
    const names = [subject.value, ...(await aliasesOf(subject, resolve))];
    for (const name of names) {
      const denial = this.check(request, kind, { kind: subject.kind, value: name });
      if (denial !== undefined) return denial;
    }
    return this.inner.decide(request);
  }

  private check(
    request: PermissionRequest,
    kind: SubjectKind,
    subject: Subject,
  ): PermissionDecision | undefined {
    switch (request.effect) {
      case "pure":
      case "network_read":
      case "network_write":
      case "external_side_effect":
        return undefined;
      case "read_only":
        if (kind === "none") return undefined;
        return outside("read", this.scope.readable, subject, kind, "a command can read any file");
      case "local_write":
      case "destructive":
        return outside(
          "edit",
          this.scope.editable,
          subject,
          kind,
          "the target of this change cannot be checked",
        );
      case "process_execution":
        return deny(
          "scope.effect",
          "outside the task's scope: a command can reach files outside the listed paths",
        );
    }
  }
}

/** The canonical spelling of a subject path, or "" (never in scope) when it is not valid. */
function canonical(path: string): string {
  try {
    return normalizeRelativePath(path);
  } catch {
    return "";
  }
}

const SCOPE_FILES = { read: "readable", edit: "editable" } as const;

/**
 * Undefined when the subject is a path in `paths`; otherwise the denial naming the read or edit
 * scope: its files when the subject is a path, `notAPath` (why it cannot be checked) when it is not.
 */
function outside(
  scope: keyof typeof SCOPE_FILES,
  paths: ReadonlySet<string>,
  subject: Subject,
  kind: SubjectKind,
  notAPath: string,
): PermissionDecision | undefined {
  if (kind === "path" && paths.has(canonical(subject.value))) return undefined;
  return deny(
    `scope.${scope}`,
    kind === "path"
      ? `outside the task's ${scope} scope: ${subject.value} is not one of the ${SCOPE_FILES[scope]} files (${list(paths)})`
      : `outside the task's ${scope} scope: ${notAPath}`,
  );
}

function deny(rule: string, reason: string): PermissionDecision {
  return { decision: "deny", rule, source: SCOPE_SOURCE, reason };
}

function list(paths: ReadonlySet<string>): string {
  return paths.size === 0 ? "none" : [...paths].join(", ");
}
