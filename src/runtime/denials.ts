import type { JsonObject } from "../shared/json.js";
import type { AdmitOutcome, ApprovalDecision, PermissionDecision } from "./ports.js";
import { type CallIdentity, errorResult, type ToolResult } from "./result.js";

/*
 * The results the model reads when authorization refuses a call: the one set of denial texts.
 * Each error code's hint (src/tools/errors.ts) adds that the same call must not be repeated
 * unchanged, so the model changes approach instead of retrying.
 */

/** The `permission` object journaled with a call (in `tool.started`, and in a denial's data). */
export function permissionRecord(decision: PermissionDecision): JsonObject {
  const record: JsonObject = {
    decision: decision.decision,
    source: decision.source,
    reason: decision.reason,
  };
  if (decision.rule !== undefined) record.rule = decision.rule;
  return record;
}

export function policyDenial(call: CallIdentity, decision: PermissionDecision): ToolResult {
  return errorResult(call, "POLICY_DENIED", `Denied by policy: ${decision.reason}`, {
    data: { permission: permissionRecord(decision) },
  });
}

/** A `propose` decision in a run that has nowhere to put proposals: refused, never run for real. */
export function noProposalStoreDenial(call: CallIdentity, decision: PermissionDecision): ToolResult {
  return errorResult(
    call,
    "POLICY_DENIED",
    "Writes are proposals in this run, but no proposal store is set up; nothing was run.",
    { data: { permission: permissionRecord(decision) } },
  );
}

/** An interrupted prompt is not the user's refusal: the model must not read it as one. */
export function approvalCancelled(call: CallIdentity): ToolResult {
  return errorResult(call, "CANCELLED", "The run was cancelled while approval was pending.", {
    data: { started: false },
    operationApplied: false,
  });
}

export function userDenial(
  call: CallIdentity,
  decision: PermissionDecision,
  answer: ApprovalDecision,
): ToolResult {
  const why = answer.reason ? ` (${answer.reason})` : "";
  return errorResult(call, "USER_DENIED", `Not approved${why}.`, {
    data: { permission: permissionRecord(decision) },
  });
}

export function hookDenial(call: CallIdentity, admitted: AdmitOutcome): ToolResult {
  const why =
    admitted.hook === undefined
      ? (admitted.reason ?? "no reason given")
      : `hook ${admitted.hook} denied${admitted.reason === undefined ? "" : `: ${admitted.reason}`}`;
  return errorResult(call, "HOOK_DENIED", `Refused by a hook: ${why}`);
}
