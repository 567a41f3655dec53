import type { ApprovalDecision, ApprovalPort, ApprovalRequest, ApprovalScope } from "../runtime/ports.js";

/* Approvers: the implementations of the runtime's approval seam (ApprovalPort). */

/** For runs without a terminal: every ask is denied. */
export class DenyApprover implements ApprovalPort {
  async request(): Promise<ApprovalDecision> {
    return { decision: "deny", scope: "once", by: "policy", reason: "no TTY to ask" };
  }
}

/**
 * For library users: a function decides. A throw, an abort or an answer that is not a
 * decision denies, so a buggy callback cannot approve by accident.
 */
export class FunctionApprover implements ApprovalPort {
  readonly #decide: (request: ApprovalRequest, signal: AbortSignal) => unknown;
  readonly #by: string;

  constructor(decide: (request: ApprovalRequest, signal: AbortSignal) => unknown, by = "user") {
    this.#decide = decide;
    this.#by = by;
  }

  async request(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    if (signal.aborted) return deny(this.#by, "cancelled");
    let answer: unknown;
    try {
      answer = await untilAborted(this.#decide(deepFreeze(structuredClone(request)), signal), signal);
    } catch {
      return deny(this.#by, "the approval callback failed");
    }
    if (signal.aborted) return deny(this.#by, "cancelled");
    return normalizeAnswer(answer, this.#by, request.pattern);
  }
}

/**
 * The callback's answer, or undefined as soon as the signal aborts: a cancelled call is denied
 * at once, not when a callback that ignores the signal gets round to answering.
 */
function untilAborted(answer: unknown, signal: AbortSignal): Promise<unknown> {
  return new Promise<unknown>((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener("abort", onAbort, { once: true });
    Promise.resolve(answer)
      .then(resolve, reject)
      .finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Accepts `true`/`false`, "allow"/"deny", or a full decision object (with `pattern`, the
 * request's offered prefix, for a session approval of it); anything else denies. A pattern the
 * request did not offer is dropped (the approval is then for the exact subject), so what an
 * approver returns never covers more than it was asked about.
 */
function normalizeAnswer(answer: unknown, by: string, offered: string | undefined): ApprovalDecision {
  if (answer === true || answer === "allow") return { decision: "allow", scope: "once", by };
  if (typeof answer !== "object" || answer === null) return deny(by, "the approval callback did not decide");
  const candidate = answer as Record<string, unknown>;
  if (candidate.decision !== "allow" && candidate.decision !== "deny") {
    return deny(by, "the approval callback did not decide");
  }
  const scope: ApprovalScope = candidate.scope === "session" ? "session" : "once";
  const decision: ApprovalDecision = {
    decision: candidate.decision,
    scope,
    by: typeof candidate.by === "string" && candidate.by !== "" ? candidate.by : by,
  };
  if (typeof candidate.reason === "string") decision.reason = candidate.reason;
  if (scope === "session" && offered !== undefined && candidate.pattern === offered)
    decision.pattern = offered;
  return decision;
}

function deny(by: string, reason: string): ApprovalDecision {
  return { decision: "deny", scope: "once", by, reason };
}

/** Freeze a plain data value all the way down, so callees cannot change what the runtime holds. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}
