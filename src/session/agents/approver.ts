import type { ApprovalDecision, ApprovalPort, ApprovalRequest } from "../../runtime/ports.js";
import type { DelegationEvent } from "../../tools/tool.js";

/**
 * The asks already labelled by the UpwardApprover of the descendant they come from: a level above
 * passes them on as they are, so a grandchild's ask is shown as the grandchild's, never relabelled
 * as the child's it climbs through. Only this module adds to it, so no call can claim a label.
 */
const labelled = new WeakSet<ApprovalRequest>();

/**
 * A child's `ask` goes up to the parent's approver (the terminal, a server client, an MCP client),
 * labelled with the child's agent path and depth and showing the exact call; the decision is
 * recorded in the parent's journal (`agent.approval`) and, as for any approval, in the child's
 * (`approval.decided`). With no one to ask above, the parent's approver denies, as it would for
 * the parent's own calls. A grandchild's ask climbs the same way through each level.
 *
 * Above, the call's id is the child's agent path and its own id (`LABEL/ID`): the parent's
 * approver never takes a child's call for one of the parent's own with the same id (a server
 * client would otherwise be shown that earlier call's arguments).
 */
export class UpwardApprover implements ApprovalPort {
  constructor(
    private readonly parent: ApprovalPort,
    private readonly agent: { label: string; path: string; depth: number },
    private readonly record: (event: DelegationEvent) => Promise<void>,
  ) {}

  async request(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    const fromBelow = labelled.has(request);
    const shown: ApprovalRequest = fromBelow
      ? request
      : {
          ...request,
          callId: `${this.agent.path}/${request.callId}`,
          display: {
            ...request.display,
            details: {
              ...request.display?.details,
              agent: `${this.agent.path} (sub-agent, depth ${this.agent.depth})`,
            },
          },
        };
    labelled.add(shown);
    const decision = await this.parent.request(shown, signal);
    await this.record({
      type: "agent.approval",
      data: {
        label: this.agent.label,
        // The child's own call id; a descendant's ask names its path (`CHILD/GRANDCHILD/ID`).
        call_id: fromBelow ? shown.callId : request.callId,
        tool: request.tool,
        decision: decision.decision === "allow" ? "allow" : "deny",
        ...(decision.by !== undefined ? { by: decision.by } : {}),
      },
    });
    return decision;
  }
}
