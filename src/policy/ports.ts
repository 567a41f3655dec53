import type {
  ApprovalPort,
  GrantPort,
  HookCallContext,
  HookPort,
  PermissionPort,
  PermissionRequest,
  ApprovalDecision as PortApprovalDecision,
  ApprovalRequest as PortApprovalRequest,
  HookPoint as PortHookPoint,
  HookRecord as PortHookRecord,
  PermissionDecision as PortPermissionDecision,
} from "../runtime/ports.js";
import type { JsonObject } from "../shared/json.js";
import { WorkspaceError, type WorkspaceFs } from "../workspace/fs.js";
import type { ApprovalDisplay, ApprovalRequest, Approver } from "./approver.js";
import { type CliPermissionFlags, cliLayer } from "./cli-flags.js";
import { grantFromRequest, grantSubject, SessionGrants } from "./grants.js";
import type { HookInput, HookRunner } from "./hooks.js";
import { buildPolicy, evaluate, type Policy } from "./permissions.js";
import { type Subject, type SubjectKind, subjectOf } from "./rules.js";
import { loadShellParser } from "./shell-command.js";

/**
 * Adapters from governance to the runtime's ports (src/runtime/ports.ts), so the pipeline can
 * use the policy, approvers, grants and hooks without knowing their types.
 */

/** Which argument a tool's rules match; build it from the registry with `subjectKindOf`. */
export type SubjectKindLookup = (tool: string) => SubjectKind | undefined;

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

const inferSubject: SubjectKindLookup = () => undefined;

export class PolicyPermissionPort implements PermissionPort {
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

  async decide(request: PermissionRequest): Promise<PortPermissionDecision> {
    const kind = this.#subjectKinds(request.tool);
    const subject = subjectOf(request.arguments, kind);
    if (subject.kind === "command") await loadShellParser();
    const aliases = await aliasesOf(subject, this.#resolvePath);
    const evaluation = evaluate(this.#policy, {
      tool: request.tool,
      effect: request.effect,
      args: request.arguments,
      ...(kind === undefined ? {} : { subjectKind: kind }),
      ...(aliases.length > 0 ? { aliases } : {}),
    });
    // "propose": the runtime runs the call against a proposal overlay; nothing is applied.
    const decision = evaluation.decision;
    const reason =
      evaluation.decision === "propose"
        ? `${evaluation.reason}: changes are proposed for review, not applied`
        : evaluation.reason;
    const result: PortPermissionDecision = { decision, source: evaluation.source, reason };
    if (evaluation.rule !== undefined) result.rule = evaluation.rule;
    return result;
  }
}

/** The runtime's approval request with the subject a session grant would cover. */
export function toApprovalRequest(
  request: PortApprovalRequest,
  subjectKinds: SubjectKindLookup,
): ApprovalRequest {
  const subject = subjectOf(request.arguments, subjectKinds(request.tool));
  return {
    callId: request.callId,
    tool: request.tool,
    arguments: request.arguments,
    effect: request.effect,
    callHash: request.callHash,
    subject: grantSubject(subject, request.arguments),
    display: toDisplay(request.display),
  };
}

function toDisplay(display: Record<string, string>): ApprovalDisplay {
  const result: ApprovalDisplay = {};
  const details: Record<string, string> = {};
  for (const [key, value] of Object.entries(display)) {
    if (key === "command") result.command = value;
    else if (key === "cwd") result.cwd = value;
    else if (key === "sandbox") result.sandbox = value;
    else if ((key === "timeout_ms" || key === "timeoutMs") && /^\d+$/.test(value))
      result.timeoutMs = Number(value);
    else details[key] = value;
  }
  if (Object.keys(details).length > 0) result.details = details;
  return result;
}

export class ApproverPort implements ApprovalPort {
  readonly #approver: Approver;
  readonly #subjectKinds: SubjectKindLookup;

  constructor(approver: Approver, subjectKinds: SubjectKindLookup = inferSubject) {
    this.#approver = approver;
    this.#subjectKinds = subjectKinds;
  }

  request(request: PortApprovalRequest, signal: AbortSignal): Promise<PortApprovalDecision> {
    return this.#approver.request(toApprovalRequest(request, this.#subjectKinds), signal);
  }
}

/** Session grants keyed by tool + subject (the path or command shown), not the whole arguments. */
export class SessionGrantPort implements GrantPort {
  readonly grants: SessionGrants;
  readonly #subjectKinds: SubjectKindLookup;

  constructor(grants: SessionGrants = new SessionGrants(), subjectKinds: SubjectKindLookup = inferSubject) {
    this.grants = grants;
    this.#subjectKinds = subjectKinds;
  }

  covers(request: PortApprovalRequest): boolean {
    return this.grants.matches(toApprovalRequest(request, this.#subjectKinds));
  }

  add(request: PortApprovalRequest): void {
    this.grants.add(grantFromRequest(toApprovalRequest(request, this.#subjectKinds)));
  }
}

export class HookRunnerPort implements HookPort {
  readonly #runner: HookRunner;

  constructor(runner: HookRunner) {
    this.#runner = runner;
  }

  notify(point: PortHookPoint, context: HookCallContext): Promise<PortHookRecord[]> {
    return this.#runner.notify(point, toHookInput(context));
  }

  async admit(
    point: PortHookPoint,
    context: HookCallContext,
  ): Promise<{ allowed: boolean; reason?: string; records: PortHookRecord[] }> {
    const outcome = await this.#runner.admit(point, toHookInput(context));
    const result: { allowed: boolean; reason?: string; records: PortHookRecord[] } = {
      allowed: outcome.allowed,
      records: outcome.records,
    };
    if (!outcome.allowed) {
      result.reason = `hook ${outcome.hook ?? "?"} denied${outcome.reason === undefined ? "" : `: ${outcome.reason}`}`;
    }
    return result;
  }

  /** A handler failure passed through unchanged is rethrown, as if no hook were there. */
  async wrap<T>(
    context: HookCallContext,
    next: () => Promise<T>,
  ): Promise<{ value: T | undefined; executed: boolean; violation?: string; records: PortHookRecord[] }> {
    const outcome = await this.#runner.wrap(toHookInput(context), next);
    switch (outcome.status) {
      case "ok":
        return { value: outcome.value, executed: true, records: outcome.records };
      case "threw":
        throw outcome.error;
      case "violation":
        return {
          value: undefined,
          executed: outcome.executed,
          violation: outcome.message,
          records: outcome.records,
        };
    }
  }
}

function toHookInput(context: HookCallContext): HookInput {
  const input: { -readonly [K in keyof HookInput]: HookInput[K] } = {
    session: context.session,
    callId: context.call_id,
    tool: context.tool,
    arguments: context.arguments,
    effect: context.effect,
  };
  if (context.status !== undefined) input.status = context.status;
  return input;
}

/**
 * A policy from modes and rules given in code (no config files): for the demo, the labs and
 * library users. The same evaluation, defaults and digest as a CLI run with these flags.
 */
export function modePolicy(
  flags: CliPermissionFlags,
  subjectKinds?: SubjectKindLookup,
  resolvePath?: PathResolver,
): PolicyPermissionPort {
  return new PolicyPermissionPort(buildPolicy([cliLayer(flags)]), subjectKinds, resolvePath);
}
