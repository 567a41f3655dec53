import type { ApprovalDecision, ApprovalPort, ApprovalRequest } from "../runtime/ports.js";

/** The options an ACP permission request offers, mapped onto harness's answers. */
export type PermissionKind = "allow_once" | "allow_always" | "reject_once" | "reject_always";

export interface PermissionOffer {
  optionId: string;
  name: string;
  kind: PermissionKind;
}

/** What the client is asked: the call, its offers, and for an edit or write its whole old and new text. */
export interface PermissionQuestion {
  request: ApprovalRequest;
  options: PermissionOffer[];
  diff?: { path: string; oldText: string | null; newText: string };
}

/** The client's answer: an option it picked, or cancelled (anything else is no answer). */
export type PermissionAnswer = { outcome: "selected"; optionId: string } | { outcome: "cancelled" };

/** How the approver reaches the client (`session/request_permission`); a rejection is no answer. */
export interface PermissionChannel {
  /** Whether the client can be asked at all (a client without the capability denies every ask). */
  readonly available: boolean;
  ask(question: PermissionQuestion, signal: AbortSignal): Promise<unknown>;
  /** The whole old and new text of an edit or write, when the call is one. */
  preview(request: ApprovalRequest): Promise<PermissionQuestion["diff"]>;
}

const deny = (by: string, reason: string): ApprovalDecision => ({
  decision: "deny",
  scope: "once",
  by,
  reason,
});

/**
 * The approver of a session driven from an editor over ACP: an `ask` becomes
 * `session/request_permission` with the call's tool, normalized arguments and diff. Each option id
 * carries the call's digest, so an answer binds to exactly this call: an option id of another
 * call, a cancelled request, no answer or a client without the capability denies.
 * `reject_always` adds a session deny for that tool and subject (later asks about it are denied
 * without asking); `allow_always` is a session grant, journaled as any approval.
 */
export class AcpApprover implements ApprovalPort {
  readonly #rejected = new Set<string>();

  constructor(private readonly channel: PermissionChannel) {}

  async request(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    if (signal.aborted) return deny("acp", "the turn was cancelled");
    if (!this.channel.available) return deny("acp", "the editor cannot answer permission requests");
    const subject = subjectKey(request);
    if (this.#rejected.has(subject)) return deny("acp", "rejected for this session in the editor");
    const options = offersFor(request.callHash);
    let diff: PermissionQuestion["diff"];
    try {
      diff = await this.channel.preview(request);
    } catch {
      diff = undefined;
    }
    let answer: unknown;
    try {
      answer = await raceAbort(
        this.channel.ask({ request, options, ...(diff !== undefined ? { diff } : {}) }, signal),
        signal,
      );
    } catch {
      return deny("acp", signal.aborted ? "the turn was cancelled" : "the editor did not answer");
    }
    const picked = pickedOption(answer, options);
    if (picked === undefined)
      return deny("acp", "the editor cancelled the request or answered no option offered");
    switch (picked.kind) {
      case "allow_once":
        return { decision: "allow", scope: "once", by: "acp" };
      case "allow_always":
        return { decision: "allow", scope: "session", by: "acp" };
      case "reject_always":
        this.#rejected.add(subject);
        return deny("acp", "rejected in the editor, for the rest of the session");
      case "reject_once":
        return deny("acp", "rejected in the editor");
    }
  }
}

/** The four options, each id bound to this call's digest. */
export function offersFor(callHash: string): PermissionOffer[] {
  const offer = (kind: PermissionKind, name: string): PermissionOffer => ({
    optionId: `${kind}:${callHash}`,
    name,
    kind,
  });
  return [
    offer("allow_once", "Allow once"),
    offer("allow_always", "Allow for this session"),
    offer("reject_once", "Reject"),
    offer("reject_always", "Reject for this session"),
  ];
}

/** The option an answer picked, only if it is one offered for this call (unknown until checked). */
function pickedOption(answer: unknown, options: readonly PermissionOffer[]): PermissionOffer | undefined {
  if (typeof answer !== "object" || answer === null) return undefined;
  const outcome = (answer as { outcome?: unknown }).outcome;
  if (typeof outcome !== "object" || outcome === null) return undefined;
  const { outcome: kind, optionId } = outcome as { outcome?: unknown; optionId?: unknown };
  if (kind !== "selected" || typeof optionId !== "string") return undefined;
  return options.find((option) => option.optionId === optionId);
}

function subjectKey(request: ApprovalRequest): string {
  // A tool without a path or command has no subject while deciding: exactly these arguments.
  const value = request.subject.value === "" ? request.callHash : request.subject.value;
  return JSON.stringify([request.tool, request.subject.kind, value]);
}

function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error("aborted"));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
