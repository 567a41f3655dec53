import type { EventData } from "../journal/vocabulary.js";
import { callHashOf, grantFor } from "../runtime/authorize.js";
import type { GrantPort, SessionGrant, SubjectKind } from "../runtime/ports.js";
import type { JsonObject } from "../shared/json.js";
import { subjectOf } from "./rules.js";

/** The session's grants, keyed by tool + subject. The engine rebuilds them on resume with `grantFromDecision`. */
export class SessionGrants implements GrantPort {
  readonly #keys = new Set<string>();
  readonly #grants: SessionGrant[] = [];

  covers(grant: SessionGrant): boolean {
    return this.#keys.has(keyOf(grant));
  }

  add(grant: SessionGrant): void {
    const key = keyOf(grant);
    if (this.#keys.has(key)) return;
    this.#keys.add(key);
    this.#grants.push({ tool: grant.tool, subject: { ...grant.subject } });
  }

  list(): SessionGrant[] {
    return this.#grants.map((grant) => ({ tool: grant.tool, subject: { ...grant.subject } }));
  }
}

function keyOf(grant: SessionGrant): string {
  return JSON.stringify([grant.tool, grant.subject.kind, grant.subject.value]);
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
export type DecidedApproval = Pick<EventData<"approval.decided">, "decision" | "scope" | "call_hash">;

/**
 * The grant a journaled decision created, or undefined (a denial, a once-approval, or a hash
 * that does not belong to this call: a journal that disagrees with itself grants nothing).
 * The same grant the live approval added: the policy decides on `subjectOf` the arguments.
 */
export function grantFromDecision(call: DecidedCall, decided: DecidedApproval): SessionGrant | undefined {
  if (decided.decision !== "allow" || decided.scope !== "session") return undefined;
  if (callHashOf(call.tool, call.arguments) !== decided.call_hash) return undefined;
  return grantFor(call.tool, call.arguments, subjectOf(call.arguments, call.subjectKind, call.subject));
}
