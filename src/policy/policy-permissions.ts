import type { PermissionDecision, PermissionPort, PermissionRequest, SubjectKind } from "../runtime/ports.js";
import type { JsonObject } from "../shared/json.js";
import { cliLayer } from "./cli-flags.js";
import { explain } from "./explain.js";
import type { PathResolver } from "./path-aliases.js";
import { buildPolicy, type PermissionSettings, type Policy } from "./permissions.js";
import { subjectOf, toolMatches } from "./rules.js";
import { sessionPatternOf } from "./session-pattern.js";

/** Which argument a tool's rules match; build it from the registry with `subjectKindOf`. */
export type SubjectKindLookup = (tool: string) => SubjectKind | undefined;

const inferSubject: SubjectKindLookup = () => undefined;

/** The run's policy as the runtime's permission seam: rules, modes and defaults decide each call. */
export class PolicyPermissions implements PermissionPort {
  readonly describe: JsonObject;
  readonly digest: string;
  readonly #policy: Policy;
  readonly #subjectKinds: SubjectKindLookup;
  readonly #resolvePath: PathResolver | undefined;

  /** `resolvePath`: rules on a file then also cover every symlink that leads to it. */
  constructor(policy: Policy, subjectKinds: SubjectKindLookup = inferSubject, resolvePath?: PathResolver) {
    this.#policy = policy;
    this.#subjectKinds = subjectKinds;
    this.#resolvePath = resolvePath;
    this.describe = policy.describe();
    this.digest = policy.digest;
  }

  /** A deny rule (any source) naming the tool with no pattern: the evaluation denies every call of it. */
  deniesOutright(tool: string): boolean {
    return this.#policy.rules.some(
      (rule) => rule.decision === "deny" && rule.pattern === undefined && toolMatches(rule.tool, tool),
    );
  }

  async decide(request: PermissionRequest): Promise<PermissionDecision> {
    const kind = this.#subjectKinds(request.tool);
    const evaluation = await explain(
      this.#policy,
      request.tool,
      request.effect,
      request.arguments,
      kind,
      request.canonicalSubject === true ? undefined : this.#resolvePath,
    );
    // "propose": the runtime runs the call against a proposal overlay; nothing is applied.
    const reason =
      evaluation.decision === "propose"
        ? `${evaluation.reason}: changes are proposed for review, not applied`
        : evaluation.reason;
    // The whole call's subject (not the command part that decided): what a session grant covers.
    const subject = subjectOf(request.arguments, kind);
    const result: PermissionDecision = {
      decision: evaluation.decision,
      source: evaluation.source,
      reason,
      subject,
    };
    if (evaluation.rule !== undefined) result.rule = evaluation.rule;
    if (evaluation.parts !== undefined) {
      result.parts = evaluation.parts.map((part) => ({
        command: part.command,
        decision: part.decision,
        grantable: part.grantable,
      }));
      const only = evaluation.parts.length === 1 ? evaluation.parts[0] : undefined;
      const pattern =
        evaluation.decision === "ask" && only?.grantable === true
          ? sessionPatternOf(only.command)
          : undefined;
      if (pattern !== undefined) result.pattern = pattern;
    }
    return result;
  }
}

/**
 * A policy from modes and rules given in code (no config files): for the demo, the labs and
 * library users. The same evaluation, defaults and digest as a CLI run with these flags.
 */
export function modePolicy(
  flags: PermissionSettings,
  subjectKinds?: SubjectKindLookup,
  resolvePath?: PathResolver,
): PolicyPermissions {
  return new PolicyPermissions(buildPolicy([cliLayer(flags)]), subjectKinds, resolvePath);
}
