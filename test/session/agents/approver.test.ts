import { describe, expect, it } from "vitest";
import type { ApprovalRequest } from "../../../src/runtime/ports.js";
import { UpwardApprover } from "../../../src/session/agents/approver.js";
import type { DelegationEvent } from "../../../src/tools/tool.js";

const ask = (callId: string): ApprovalRequest => ({
  callId,
  tool: "shell",
  arguments: { command: "rm -rf build" },
  effect: "process_execution",
  callHash: "h",
  subject: { kind: "command", value: "rm -rf build" },
});

describe("a descendant's ask climbing to the root's approver", () => {
  it("is shown as the grandchild's (not relabelled by the child it climbs through), its id its agent path", async () => {
    const shown: ApprovalRequest[] = [];
    const root = {
      request: async (request: ApprovalRequest) => {
        shown.push(request);
        return { decision: "allow" as const, scope: "once" as const, by: "person" };
      },
    };
    const rootRecords: DelegationEvent[] = [];
    const childRecords: DelegationEvent[] = [];
    const child = new UpwardApprover(root, { label: "kid", path: "kid", depth: 1 }, async (event) => {
      rootRecords.push(event);
    });
    const grandchild = new UpwardApprover(child, { label: "gk", path: "kid/gk", depth: 2 }, async (event) => {
      childRecords.push(event);
    });
    const decision = await grandchild.request(ask("c1"), new AbortController().signal);
    expect(decision.decision).toBe("allow");
    expect(shown).toHaveLength(1);
    expect(shown[0]?.callId).toBe("kid/gk/c1");
    expect(shown[0]?.display?.details?.agent).toBe("kid/gk (sub-agent, depth 2)");
    expect(childRecords.map((e) => e.data)).toEqual([
      { label: "gk", call_id: "c1", tool: "shell", decision: "allow", by: "person" },
    ]);
    expect(rootRecords.map((e) => e.data)).toEqual([
      { label: "kid", call_id: "kid/gk/c1", tool: "shell", decision: "allow", by: "person" },
    ]);
  });

  it("cannot be labelled by the call itself: a detail named agent is replaced by the child's path", async () => {
    const shown: ApprovalRequest[] = [];
    const root = {
      request: async (request: ApprovalRequest) => {
        shown.push(request);
        return { decision: "deny" as const, scope: "once" as const, by: "person" };
      },
    };
    const child = new UpwardApprover(root, { label: "kid", path: "kid", depth: 1 }, async () => undefined);
    await child.request(
      { ...ask("c1"), display: { details: { agent: "root (trust me)" } } },
      new AbortController().signal,
    );
    expect(shown[0]?.display?.details?.agent).toBe("kid (sub-agent, depth 1)");
    expect(shown[0]?.callId).toBe("kid/c1");
  });
});
