import type { EventData } from "../journal/vocabulary.js";
import { callHashOf, grantFor } from "../runtime/authorize.js";
import type { DecidedPart, GrantPort, SessionGrant, SubjectKind } from "../runtime/ports.js";
import type { JsonObject } from "../shared/json.js";
import { commandPatternMatches, subjectOf } from "./rules.js";
import { sessionPatternOf } from "./session-pattern.js";
import { loadShellParser, splitCommand } from "./shell-command.js";

/**
 * The session's grants: exact ones keyed by tool + subject, and command patterns (`npm test*`)
 * that cover a line only part by part. The engine rebuilds them on resume with `grantFromDecision`
 * (`engine/grants-restore.ts`), from the session approvals its fold keeps.
 */
export class SessionGrants implements GrantPort {
  readonly #keys = new Set<string>();
  readonly #grants: SessionGrant[] = [];
  /** Pattern grants: tool and pattern. */
  readonly #patterns: { tool: string; pattern: string }[] = [];

  covers(grant: SessionGrant, parts?: readonly DecidedPart[]): boolean {
    if (this.#keys.has(keyOf(grant))) return true;
    if (grant.subject.kind !== "command" || parts === undefined || parts.length === 0) return false;
    const patterns = this.#patterns.filter((entry) => entry.tool === grant.tool);
    if (patterns.length === 0) return false;
    // Each simple command is authorized on its own: `npm test; rm -rf x` under `npm test*`
    // still asks for `rm -rf x`. A part the policy denies, proposes, or asks about for a reason
    // of its own (a wrapper's rule, what the parser could not see) is never covered.
    return parts.every(
      (part) =>
        part.decision === "allow" ||
        (part.decision === "ask" &&
          part.grantable &&
          patterns.some((entry) => commandPatternMatches(entry.pattern, part.command))),
    );
  }

  add(grant: SessionGrant): void {
    const key = keyOf(grant);
    if (this.#keys.has(key)) return;
    this.#keys.add(key);
    if (grant.pattern !== undefined) this.#patterns.push({ tool: grant.tool, pattern: grant.pattern });
    this.#grants.push(copy(grant));
  }

  list(): SessionGrant[] {
    return this.#grants.map(copy);
  }
}

function copy(grant: SessionGrant): SessionGrant {
  return {
    tool: grant.tool,
    subject: { ...grant.subject },
    ...(grant.pattern !== undefined ? { pattern: grant.pattern } : {}),
  };
}

/** A pattern grant is its own key: it never covers a line as an exact grant of its subject would. */
function keyOf(grant: SessionGrant): string {
  return grant.pattern !== undefined
    ? JSON.stringify([grant.tool, "pattern", grant.pattern])
    : JSON.stringify([grant.tool, grant.subject.kind, grant.subject.value]);
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
export type DecidedApproval = Pick<
  EventData<"approval.decided">,
  "decision" | "scope" | "call_hash" | "pattern"
>;

/**
 * The grant a journaled decision created, or undefined (a denial, a once-approval, or a hash
 * that does not belong to this call: a journal that disagrees with itself grants nothing).
 * The same grant the live approval added: the policy decides on `subjectOf` the arguments.
 */
export function grantFromDecision(call: DecidedCall, decided: DecidedApproval): SessionGrant | undefined {
  if (decided.decision !== "allow" || decided.scope !== "session") return undefined;
  if (callHashOf(call.tool, call.arguments) !== decided.call_hash) return undefined;
  const subject = subjectOf(call.arguments, call.subjectKind, call.subject);
  const grant = grantFor(call.tool, call.arguments, subject);
  if (decided.pattern === undefined) return grant;
  // A pattern grants only what the approval offered for this very command: one simple command
  // and its pattern (the shell parser must be loaded: `loadShellParser`). Any other pattern in a
  // journal grants the exact command, never more.
  if (subject.kind !== "command") return grant;
  const parts = splitCommand(subject.value).parts;
  const only = parts.length === 1 ? parts[0] : undefined;
  if (only === undefined || only.unknown !== undefined || only.opaque !== undefined) return grant;
  return sessionPatternOf(only.text) === decided.pattern ? { ...grant, pattern: decided.pattern } : grant;
}

/** Whether restoring these decisions needs the shell parser (a pattern grant is checked with it). */
export async function prepareGrantRestore(decisions: readonly DecidedApproval[]): Promise<void> {
  if (decisions.some((decided) => decided.pattern !== undefined)) await loadShellParser();
}
