import { ErrorCode, RpcError } from "../api/errors.js";
import type { ApprovalDecision, ApprovalPort, ApprovalRequest } from "../runtime/ports.js";
import { digestOf } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";

/** A pending approval as `approval/list` shows it: its approval/requested notification's params. */
export type PendingApproval = JsonObject;

export type WireDecision = "accept" | "accept_session" | "decline";

interface Waiting {
  info: PendingApproval;
  settle(decision: ApprovalDecision): void;
}

/**
 * The approver of a served session: an `ask` waits here until a client answers it over the
 * wire (approval/respond), the optional timeout denies it, or the turn is interrupted. With no
 * client connected it simply waits (the session is awaiting_approval, never cancelled); a
 * client that connects later finds it in approval/list.
 */
export class WireApprover implements ApprovalPort {
  readonly #waiting = new Map<string, Waiting>();

  constructor(
    private readonly session: string,
    /** This call's approval/requested params (approval.requested is durable before we are asked). */
    private readonly requestedOf: (callId: string) => JsonObject | undefined,
    private readonly onChange: () => void,
    private readonly timeoutMs?: number,
  ) {}

  get pending(): PendingApproval[] {
    return [...this.#waiting.values()].map((waiting) => waiting.info);
  }

  request(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    // The journaled params of this call's ask, only if they are this ask's: a call id is the
    // model's to choose, and an earlier ask under the same id must never be shown for this one.
    const recorded = this.requestedOf(request.callId);
    const requested =
      recorded !== undefined &&
      recorded.tool === request.tool &&
      digestOf(recorded.arguments ?? null) === digestOf(request.arguments)
        ? recorded
        : undefined;
    const approvalId =
      typeof requested?.approval_id === "string"
        ? requested.approval_id
        : `${this.session}:${request.callId}`;
    return new Promise<ApprovalDecision>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = (decision: ApprovalDecision) => {
        if (!this.#waiting.delete(approvalId)) return;
        if (timer) clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        resolve(decision);
        this.onChange();
      };
      const onAbort = () =>
        settle({ decision: "deny", scope: "once", by: "server", reason: "the turn was interrupted" });
      this.#waiting.set(approvalId, {
        info: requested ?? {
          approval_id: approvalId,
          session: this.session,
          call_id: request.callId,
          tool: request.tool,
          effect: request.effect,
          arguments: request.arguments,
        },
        settle,
      });
      if (this.timeoutMs !== undefined)
        timer = setTimeout(
          () => settle({ decision: "deny", scope: "once", by: "server", reason: "approval timed out" }),
          this.timeoutMs,
        );
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
      this.onChange();
    });
  }

  has(approvalId: string): boolean {
    return this.#waiting.has(approvalId);
  }

  /** Answer a waiting approval; the caller checked it exists (see `has`). */
  respond(approvalId: string, decision: WireDecision, identity: string): void {
    const waiting = this.#waiting.get(approvalId);
    if (!waiting)
      throw new RpcError(ErrorCode.Conflict, `approval ${approvalId} is not waiting (already answered)`);
    const by = `identity:${identity}`;
    // Only an explicit accept allows: anything else the wire carries denies.
    waiting.settle(
      decision === "accept" || decision === "accept_session"
        ? { decision: "allow", scope: decision === "accept_session" ? "session" : "once", by }
        : { decision: "deny", scope: "once", by, reason: "declined over the wire" },
    );
  }
}
