// What a team embedding the runtime needs comes from the package entry: approvers, the hook
// runner, the policy and session grants (each implementing a runtime port directly); the
// executor, the terminal approver and the escaper from `harness/engine`. They behave as the CLI's own.
import { describe, expect, it } from "vitest";
import { Executor, escapeForTerminal, TtyApprover } from "../../src/engine-entry.js";
import {
  type ApprovalRequest,
  FunctionApprover,
  HOOK_POINTS,
  HookRunner,
  modePolicy,
  SandboxUnavailableError,
  SessionGrants,
} from "../../src/index.js";

const request: ApprovalRequest = {
  callId: "c1",
  tool: "shell",
  arguments: { command: "npm test" },
  effect: "process_execution",
  callHash: "h",
  subject: { kind: "command", value: "npm test" },
};

describe("the library surface", () => {
  it("a FunctionApprover from the package approves what its callback allows and denies on a throw", async () => {
    const signal = new AbortController().signal;
    const allow = new FunctionApprover(() => ({ decision: "allow", scope: "once" }), "ci-bot");
    expect(await allow.request(request, signal)).toMatchObject({ decision: "allow", by: "ci-bot" });
    const broken = new FunctionApprover(() => {
      throw new Error("bug");
    });
    expect((await broken.request(request, signal)).decision).toBe("deny");
  });

  it("a HookRunner from the package lets an admit hook deny a call, with a record to journal", async () => {
    const runner = new HookRunner([
      {
        name: "no-push",
        kind: "admit",
        point: "before_execute",
        run: () => ({ decision: "deny", reason: "frozen" }),
      },
    ]);
    const outcome = await runner.admit("before_execute", {
      session: "s",
      callId: "c1",
      tool: "shell",
      arguments: { command: "git push" },
      effect: "process_execution",
    });
    expect(outcome).toMatchObject({ allowed: false, hook: "no-push", reason: "frozen" });
    expect(outcome.records).toEqual([expect.objectContaining({ call_id: "c1", decision: "deny" })]);
  });

  it("a policy from modes and the session grants from the package decide as the runtime's ports", async () => {
    const policy = modePolicy({ shell: "ask" });
    expect(
      await policy.decide({ tool: "shell", effect: "process_execution", arguments: { command: "npm test" } }),
    ).toMatchObject({ decision: "ask", subject: request.subject });
    const grants = new SessionGrants();
    grants.add({ tool: "shell", subject: request.subject });
    expect(grants.covers({ tool: "shell", subject: request.subject })).toBe(true);
    expect(HOOK_POINTS).toContain("before_execute");
  });

  it("exports the sandbox error, and from harness/engine the executor, the terminal approver and the escaper", () => {
    expect(typeof Executor).toBe("function");
    expect(new SandboxUnavailableError("not_found", "x")).toBeInstanceOf(Error);
    expect(typeof TtyApprover).toBe("function");
    expect(escapeForTerminal("a\u001b[2Jb\u202e")).toBe("a\\x1b[2Jb\\u202e");
  });
});
