import { canonicalJson, digestOf } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";
import type { ApprovalDisplay, EffectClass, ReadAccess, ReadAccessOptions } from "../tools/tool.js";
import { approvalCancelled, hookDenial, noProposalStoreDenial, policyDenial, userDenial } from "./denials.js";
import type {
  ApprovalDecision,
  ApprovalPort,
  ApprovalRequest,
  GrantPort,
  HistoryEntry,
  HookCallContext,
  HookPort,
  HookRecord,
  PermissionDecision,
  PermissionPort,
  Recorder,
  SessionGrant,
  Subject,
} from "./ports.js";
import type { ToolResult } from "./result.js";
import { type UntrustedSeen, untrustedReason, WIDENING_EFFECTS } from "./untrusted.js";

/*
 * The authorization stage of a tool call. Capability is not permission: each call is decided
 * now, against the current policy, session grants and approver, and only then shown to the
 * admit hooks. `authorization` is the rule itself (no effects); `authorize` runs it with the
 * ports and journals the approval exchange.
 */

/** A validated call as authorization sees it. */
export interface AuthorizeCall {
  id: string;
  name: string;
  effect: EffectClass;
  /** The call's arguments: what the policy decides and an approval is bound to. */
  arguments: JsonObject;
  /** What the tool wants an approver to see besides the arguments. */
  display?: ApprovalDisplay;
}

/** The seams authorization consults. */
export interface AuthorizePorts {
  permissions: PermissionPort;
  approver: ApprovalPort;
  grants: GrantPort;
  hooks?: HookPort | undefined;
  /** Whether a proposal store is set up: a `propose` decision without one denies. */
  proposals: boolean;
  /** Settled calls of the session so far, for policies that depend on observations. */
  history?(): readonly HistoryEntry[];
  /** Untrusted results the model has seen this turn (runtime/untrusted.ts). */
  untrusted?(): readonly UntrustedSeen[];
}

/** Where the stage writes: the journal, and the runtime's buffer of hook decisions. */
export interface AuthorizeEffects {
  recorder: Recorder;
  signal: AbortSignal;
  /** The call as hooks see it (built only when a hook runs). */
  hookContext(): HookCallContext;
  /** Hook decisions to journal; `now`: before this resolves (a denial must not precede them). */
  hookRecords(records: HookRecord[], now: boolean): Promise<void>;
}

/**
 * A call's authorization. `allow` carries the permission `tool.started` records (its decision is
 * `propose` for a call that runs against the proposal overlay); `deny` the result to commit.
 */
export type Authorization =
  | { outcome: "allow"; permission: PermissionDecision }
  | { outcome: "deny"; denial: ToolResult };

/** What the policy decision, grants and approver's answer mean for the call. */
export interface AuthorizationInput {
  call: Pick<AuthorizeCall, "id" | "name">;
  decision: PermissionDecision;
  /** Whether a proposal store is set up. */
  proposals: boolean;
  /** Whether a session grant covers the call (consulted for `ask` only). */
  granted: boolean;
  /** The approver's answer, once asked. */
  answer?: ApprovalDecision;
  /** The run was cancelled while the approver was asked. */
  cancelled?: boolean;
}

/**
 * The authorization rule, without effects: `ask` when a person must be asked and has not been
 * yet. An interrupted prompt is CANCELLED, not the user's refusal.
 */
export function authorization(input: AuthorizationInput): Authorization | { outcome: "ask" } {
  const { decision, answer } = input;
  const id = { call_id: input.call.id, name: input.call.name };
  switch (decision.decision) {
    case "allow":
      return { outcome: "allow", permission: decision };
    case "deny":
      return { outcome: "deny", denial: policyDenial(id, decision) };
    case "propose":
      return input.proposals
        ? { outcome: "allow", permission: decision }
        : { outcome: "deny", denial: noProposalStoreDenial(id, decision) };
    case "ask":
      if (input.granted) {
        return {
          outcome: "allow",
          permission: { ...decision, decision: "allow", reason: "approved earlier for this session" },
        };
      }
      if (answer === undefined) return { outcome: "ask" };
      if (answer.decision === "allow") {
        return {
          outcome: "allow",
          permission: { ...decision, decision: "allow", reason: `approved by ${answer.by}` },
        };
      }
      if (input.cancelled) return { outcome: "deny", denial: approvalCancelled(id) };
      return { outcome: "deny", denial: userDenial(id, decision, answer) };
  }
}

/**
 * Authorize one call: policy, then (for `ask`) a session grant or the approver, then the admit
 * hooks at `before_execute`, which run only for calls already allowed, so no hook can turn a
 * deny into an allow. `approval.requested` is durable before the approver is asked; an
 * approver that fails denies.
 */
export async function authorize(
  call: AuthorizeCall,
  ports: AuthorizePorts,
  effects: AuthorizeEffects,
): Promise<Authorization> {
  if (ports.hooks)
    await effects.hookRecords(await ports.hooks.notify("before_permission", effects.hookContext()), false);
  const history = ports.history?.();
  const decided = await ports.permissions.decide({
    tool: call.name,
    effect: call.effect,
    arguments: call.arguments,
    ...(history ? { history } : {}),
  });
  const tainted = taintedDecision(call, decided, ports.untrusted?.() ?? []);
  const decision = tainted?.decision ?? decided;
  const grant = grantFor(call.name, call.arguments, decision.subject);
  const input: AuthorizationInput = {
    call,
    decision,
    proposals: ports.proposals,
    // After untrusted content no earlier "for the session" answer stands in for this question.
    granted:
      decision.decision === "ask" && tainted === undefined && ports.grants.covers(grant, decision.parts),
  };
  let ruled = authorization(input);
  if (ruled.outcome === "ask") {
    const asked: AuthorizeCall =
      tainted === undefined
        ? call
        : {
            ...call,
            display: { ...call.display, details: { ...call.display?.details, untrusted: tainted.preceded } },
          };
    const answer = await ask(asked, decision, grant.subject, ports.approver, effects, tainted !== undefined);
    ruled = authorization({ ...input, answer, cancelled: effects.signal.aborted }) as Authorization;
    if (ruled.outcome === "allow" && answer.scope === "session")
      ports.grants.add(answer.pattern !== undefined ? { ...grant, pattern: answer.pattern } : grant);
  }
  if (ruled.outcome === "deny" || !ports.hooks) return ruled;
  const admitted = await ports.hooks.admit("before_execute", effects.hookContext());
  await effects.hookRecords(admitted.records, true);
  if (!admitted.allowed)
    return { outcome: "deny", denial: hookDenial({ call_id: call.id, name: call.name }, admitted) };
  return ruled;
}

/**
 * A call that would widen what leaves the machine (an external, network-writing or destructive
 * effect) after the model saw untrusted content this turn: a rule's allow (or a session grant)
 * becomes a question to a person, the reason naming the content that came before. A deny stays a
 * deny; a propose runs against the overlay and reaches nothing.
 */
function taintedDecision(
  call: AuthorizeCall,
  decision: PermissionDecision,
  seen: readonly UntrustedSeen[],
): { decision: PermissionDecision; preceded: string } | undefined {
  if (seen.length === 0 || !WIDENING_EFFECTS.has(call.effect)) return undefined;
  if (decision.decision !== "allow" && decision.decision !== "ask") return undefined;
  const preceded = untrustedReason(seen);
  return { decision: { ...decision, decision: "ask", reason: `${preceded}; ${decision.reason}` }, preceded };
}

/** Ask the approver, journaling the request before and the answer after. */
async function ask(
  call: AuthorizeCall,
  decision: PermissionDecision,
  subject: Subject,
  approver: ApprovalPort,
  effects: AuthorizeEffects,
  /** Journal the reason with the request (a question untrusted content raised). */
  withReason = false,
): Promise<ApprovalDecision> {
  const request: ApprovalRequest = {
    callId: call.id,
    tool: call.name,
    arguments: call.arguments,
    effect: call.effect,
    callHash: callHashOf(call.name, call.arguments),
    subject,
    reason: decision.reason,
  };
  if (call.display !== undefined) request.display = call.display;
  if (decision.pattern !== undefined) request.pattern = decision.pattern;
  await effects.recorder.record([
    {
      type: "approval.requested",
      data: {
        call_id: call.id,
        name: call.name,
        call_hash: request.callHash,
        effect: call.effect,
        ...(withReason ? { reason: decision.reason } : {}),
      },
    },
  ]);
  let answer: ApprovalDecision;
  try {
    answer = await approver.request(request, effects.signal);
  } catch {
    answer = { decision: "deny", scope: "once", by: "approver", reason: "the approver failed" };
  }
  answer = offeredOnly(answer, request);
  await effects.recorder.record([
    {
      type: "approval.decided",
      data: {
        call_id: call.id,
        call_hash: request.callHash,
        decision: answer.decision,
        scope: answer.scope,
        by: answer.by,
        ...(answer.reason !== undefined ? { reason: answer.reason } : {}),
        ...(answer.pattern !== undefined ? { pattern: answer.pattern } : {}),
      },
    },
  ]);
  return answer;
}

/**
 * An answer grants no more than the question offered: a pattern is kept only on an allow for the
 * session, and only when it is the one the request offered; any other is the exact subject.
 */
function offeredOnly(answer: ApprovalDecision, request: ApprovalRequest): ApprovalDecision {
  if (answer.pattern === undefined) return answer;
  const { pattern, ...rest } = answer;
  return answer.decision === "allow" && answer.scope === "session" && pattern === request.pattern
    ? answer
    : rest;
}

/** The tool whose permission decides what any tool may reveal of a file's content. */
const READ_TOOL = "read_file";

/**
 * What read_file would be allowed to read, for tools that reach file content another way
 * (grep, glob, read_artifact): the same permission port and session grants, never a prompt.
 * `canonical`: see ReadAccessOptions (the rules then skip resolving the path's symlinks).
 */
export async function readAccess(
  path: string,
  ports: Pick<AuthorizePorts, "permissions" | "grants">,
  options: ReadAccessOptions = {},
): Promise<ReadAccess> {
  const args = { path };
  const decision = await ports.permissions.decide({
    tool: READ_TOOL,
    effect: "read_only",
    arguments: args,
    ...(options.canonical === true ? { canonicalSubject: true } : {}),
  });
  if (decision.decision === "allow") return "allowed";
  if (decision.decision !== "ask") return "denied";
  return ports.grants.covers(grantFor(READ_TOOL, args, decision.subject)) ? "allowed" : "ask";
}

/** The hash an approval is bound to: a retried or changed call is a new decision. */
export function callHashOf(tool: string, args: JsonObject): string {
  return digestOf({ tool, arguments: args });
}

/**
 * What a session grant from approving this call covers: the subject the policy decided on, or,
 * for a call without a path or command, exactly these arguments.
 */
export function grantFor(tool: string, args: JsonObject, subject: Subject | undefined): SessionGrant {
  if (subject === undefined || subject.kind === "none") {
    return { tool, subject: { kind: "none", value: canonicalJson(args) } };
  }
  return { tool, subject: { ...subject } };
}
