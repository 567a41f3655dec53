import type { JsonObject } from "../shared/json.js";
import { type ApprovalRequest, callHashOf } from "./approver.js";
import { exactArgumentsSubject, type Subject, type SubjectKind, subjectOf } from "./rules.js";

/**
 * A session-scoped approval: later calls of the same tool with exactly the same subject (the
 * path or command shown; for tools without one, exactly the same arguments) run without asking.
 */
export interface SessionGrant {
  tool: string;
  subject: Subject;
}

/** What a session grant from a call would cover. */
export function grantSubject(subject: Subject, args: JsonObject): Subject {
  return subject.kind === "none" ? { kind: "none", value: exactArgumentsSubject(args) } : subject;
}

/** The session's grants. The engine rebuilds it on resume with `grantFromDecision`. */
export class SessionGrants {
  readonly #keys = new Set<string>();
  readonly #grants: SessionGrant[] = [];

  matches(request: Pick<ApprovalRequest, "tool" | "subject">): boolean {
    return this.#keys.has(keyOf(request.tool, request.subject));
  }

  add(grant: SessionGrant): void {
    const key = keyOf(grant.tool, grant.subject);
    if (this.#keys.has(key)) return;
    this.#keys.add(key);
    this.#grants.push({ tool: grant.tool, subject: { ...grant.subject } });
  }

  list(): SessionGrant[] {
    return this.#grants.map((grant) => ({ tool: grant.tool, subject: { ...grant.subject } }));
  }
}

function keyOf(tool: string, subject: Subject): string {
  return JSON.stringify([tool, subject.kind, subject.value]);
}

/** The call a journaled decision was about, as found in the session's model.reply. */
export interface DecidedCall {
  tool: string;
  arguments: JsonObject;
  subjectKind?: SubjectKind;
  /** The canonical subject the runtime used when it asked, if it passed one. */
  subject?: string;
}

/** The fields of an `approval.decided` event that matter here. */
export interface DecidedApproval {
  decision: "allow" | "deny";
  scope: "once" | "session";
  call_hash: string;
}

/**
 * The grant a journaled decision created, or undefined (a denial, a once-approval, or a hash
 * that does not belong to this call: a journal that disagrees with itself grants nothing).
 */
export function grantFromDecision(call: DecidedCall, decided: DecidedApproval): SessionGrant | undefined {
  if (decided.decision !== "allow" || decided.scope !== "session") return undefined;
  if (callHashOf(call.tool, call.arguments) !== decided.call_hash) return undefined;
  const subject = subjectOf(call.arguments, call.subjectKind, call.subject);
  return { tool: call.tool, subject: grantSubject(subject, call.arguments) };
}

/** The grant an approved request creates (used live; resume uses grantFromDecision). */
export function grantFromRequest(request: Pick<ApprovalRequest, "tool" | "subject">): SessionGrant {
  return { tool: request.tool, subject: { ...request.subject } };
}
