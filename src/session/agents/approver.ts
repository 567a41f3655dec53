import type { ApprovalDecision, ApprovalPort, ApprovalRequest } from "../../runtime/ports.js";
import type { DelegationEvent } from "../../tools/tool.js";

/**
 * A child's `ask` goes up to the parent's approver (the terminal, a server client, an MCP client),
 * labelled with the child's agent path and depth and showing the exact call; the decision is
 * recorded in the parent's journal (`agent.approval`) and, as for any approval, in the child's
 * (`approval.decided`). With no one to ask above, the parent's approver denies, as it would for
 * the parent's own calls. A grandchild's ask climbs the same way through each level.
 */
export class UpwardApprover implements ApprovalPort {
  constructor(
    private readonly parent: ApprovalPort,
    private readonly agent: { label: string; path: string; depth: number },
    private readonly record: (event: DelegationEvent) => Promise<void>,
  ) {}

  async request(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    const shown: ApprovalRequest = {
      ...request,
      display: {
        ...request.display,
        details: {
          ...request.display?.details,
          agent: `${this.agent.path} (sub-agent, depth ${this.agent.depth})`,
        },
      },
    };
    const decision = await this.parent.request(shown, signal);
    await this.record({
      type: "agent.approval",
      data: {
        label: this.agent.label,
        call_id: request.callId,
        tool: request.tool,
        decision: decision.decision === "allow" ? "allow" : "deny",
        ...(decision.by !== undefined ? { by: decision.by } : {}),
      },
    });
    return decision;
  }
}
