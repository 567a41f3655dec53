import type { JsonObject } from "../shared/json.js";
import type { EffectClass } from "../tools/tool.js";
import {
  type ApprovalDecision,
  type ApprovalDisplay,
  type ApprovalRequest,
  type Approver,
  callHashOf,
} from "./approver.js";
import { policyDenialMessage, userDenialMessage } from "./denials.js";
import { grantFromRequest, grantSubject, type SessionGrants } from "./grants.js";
import { type Evaluation, evaluate, type PermissionQuery, type Policy } from "./permissions.js";
import type { SubjectKind } from "./rules.js";
import { loadShellParser } from "./shell-command.js";

/** A validated call as the runtime hands it to authorization. */
export interface AuthorizeCall {
  id: string;
  tool: string;
  effect: EffectClass;
  /** Normalized (schema-parsed) arguments. */
  arguments: JsonObject;
  subjectKind?: SubjectKind;
  /** Canonical subject (e.g. the resolved path), when the runtime has one. */
  subject?: string;
  /** Other names of the path subject (what its symlinks resolve to); all are decided. */
  aliases?: readonly string[];
}

export interface AuthorizeInput {
  policy: Policy;
  call: AuthorizeCall;
  grants: SessionGrants;
  approver: Approver;
  signal: AbortSignal;
  display?: ApprovalDisplay;
  /** Awaited before the approver is asked, so `approval.requested` is journaled first. */
  onApprovalRequested?(request: ApprovalRequest): Promise<void> | void;
}

/** An ask and its answer, for `approval.requested` / `approval.decided`. */
export interface ApprovalExchange {
  request: ApprovalRequest;
  decision: ApprovalDecision;
}

export type Authorization =
  | { outcome: "allow"; evaluation: Evaluation; approval?: ApprovalExchange }
  | { outcome: "propose"; evaluation: Evaluation }
  | {
      outcome: "deny";
      code: "POLICY_DENIED" | "USER_DENIED";
      message: string;
      evaluation: Evaluation;
      approval?: ApprovalExchange;
    };

/**
 * Capability is not permission: decide this call now, against the current policy, grants and
 * approver. Never throws for an approver failure (that denies).
 */
export async function authorize(input: AuthorizeInput): Promise<Authorization> {
  const { policy, call } = input;
  const query: PermissionQuery = { tool: call.tool, effect: call.effect, args: call.arguments };
  if (call.subjectKind !== undefined) query.subjectKind = call.subjectKind;
  if (call.subject !== undefined) query.subject = call.subject;
  if (call.aliases !== undefined) query.aliases = call.aliases;
  await loadShellParser();
  const evaluation = evaluate(policy, query);

  switch (evaluation.decision) {
    case "allow":
      return { outcome: "allow", evaluation };
    case "propose":
      return { outcome: "propose", evaluation };
    case "deny":
      return {
        outcome: "deny",
        code: "POLICY_DENIED",
        message: policyDenialMessage(call.tool, evaluation.reason),
        evaluation,
      };
    case "ask":
      return ask(input, evaluation);
  }
}

async function ask(input: AuthorizeInput, evaluation: Evaluation): Promise<Authorization> {
  const { call, grants } = input;
  const request: ApprovalRequest = {
    callId: call.id,
    tool: call.tool,
    arguments: call.arguments,
    effect: call.effect,
    callHash: callHashOf(call.tool, call.arguments),
    subject: grantSubject(evaluation.subject, call.arguments),
    reason: evaluation.reason,
  };
  if (input.display !== undefined) request.display = input.display;

  if (grants.matches(request)) {
    const decision: ApprovalDecision = { decision: "allow", scope: "session", by: "session_grant" };
    return { outcome: "allow", evaluation, approval: { request, decision } };
  }

  await input.onApprovalRequested?.(request);
  let decision: ApprovalDecision;
  try {
    decision = await input.approver.request(request, input.signal);
  } catch {
    decision = { decision: "deny", scope: "once", by: "user", reason: "the approver failed" };
  }
  const approval = { request, decision };
  if (decision.decision !== "allow") {
    return {
      outcome: "deny",
      code: "USER_DENIED",
      message: userDenialMessage(call.tool, decision.reason),
      evaluation,
      approval,
    };
  }
  if (decision.scope === "session") grants.add(grantFromRequest(request));
  return { outcome: "allow", evaluation, approval };
}

/** The `permission` object of `tool.started`: what allowed this call and on whose word. */
export function permissionRecord(authorization: Authorization): JsonObject {
  const { evaluation } = authorization;
  const record: JsonObject = { decision: evaluation.decision, source: evaluation.source };
  if (evaluation.rule !== undefined) record.rule = evaluation.rule;
  if ("approval" in authorization && authorization.approval !== undefined) {
    record.approved_by = authorization.approval.decision.by;
    record.scope = authorization.approval.decision.scope;
  }
  return record;
}
