import { describe, expect, it } from "vitest";
import { ApprovalDesk } from "../../src/mcp-server/approvals.js";
import type { ApprovalAsk } from "../../src/mcp-server/served-session.js";
import type { ApprovalDecision } from "../../src/runtime/ports.js";

function askFor(path: string): { ask: ApprovalAsk; answers: ApprovalDecision[] } {
  const answers: ApprovalDecision[] = [];
  const ask: ApprovalAsk = {
    request: {
      callId: "mcp-1",
      tool: "write_file",
      arguments: { path, content: "x" },
      effect: "local_write",
      callHash: "0".repeat(64),
      subject: { kind: "path", value: path },
      reason: "write mode is ask",
    },
    answer: (decision) => answers.push(decision),
  };
  return { ask, answers };
}

/** The token and the elicitation an input_required result carries. */
function tokenOf(result: unknown): { token: string; message: string } {
  const shaped = result as {
    requestState: string;
    inputRequests: { approval: { method: string; params: { message: string } } };
  };
  expect(shaped.inputRequests.approval.method).toBe("elicitation/create");
  return { token: shaped.requestState, message: shaped.inputRequests.approval.params.message };
}

describe("approvals asked of an MCP client", () => {
  const args = { path: "a.txt", content: "x" };

  it("asks with the tool, its arguments and the policy's reason, under a random token", () => {
    const desk = new ApprovalDesk();
    const first = tokenOf(desk.ask("mcp-1", "write_file", args, askFor("a.txt").ask));
    const second = tokenOf(desk.ask("mcp-2", "write_file", args, askFor("a.txt").ask));
    expect(first.message).toContain("write_file");
    expect(first.message).toContain('"path":"a.txt"');
    expect(first.message).toContain("why: write mode is ask");
    expect(first.token).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(first.token).not.toBe(second.token);
  });

  it("allows only an accepted approve: true (once, or for the session when asked to remember)", () => {
    const cases: [unknown, Partial<ApprovalDecision>][] = [
      [
        { action: "accept", content: { approve: true } },
        { decision: "allow", scope: "once" },
      ],
      [
        { action: "accept", content: { approve: true, remember: true } },
        { decision: "allow", scope: "session" },
      ],
      [{ action: "accept", content: { approve: false } }, { decision: "deny" }],
      [{ action: "accept", content: { approve: "yes" } }, { decision: "deny" }],
      [{ action: "decline" }, { decision: "deny", reason: "the user chose decline" }],
      [{ action: "cancel" }, { decision: "deny", reason: "the user chose cancel" }],
      [undefined, { decision: "deny", reason: "no approval answer was sent" }],
    ];
    for (const [response, expected] of cases) {
      const desk = new ApprovalDesk();
      const { ask, answers } = askFor("a.txt");
      const { token } = tokenOf(desk.ask("mcp-1", "write_file", args, ask));
      const answered = desk.answer(
        token,
        "write_file",
        args,
        response === undefined ? {} : { approval: response },
      );
      expect(answered).toEqual({ callId: "mcp-1" });
      expect(answers).toHaveLength(1);
      expect(answers[0]).toMatchObject({ ...expected, by: "mcp-client" });
    }
  });

  it("answers nothing for an unknown token, a used one, or a retry that is another call", () => {
    const desk = new ApprovalDesk();
    const { ask, answers } = askFor("a.txt");
    const { token } = tokenOf(desk.ask("mcp-1", "write_file", args, ask));
    const yes = { approval: { action: "accept", content: { approve: true } } };
    expect(desk.answer("forged", "write_file", args, yes)).toHaveProperty("error");
    expect(desk.answer(token, "write_file", { path: "other.txt", content: "x" }, yes)).toEqual({
      error: "the call sent with the approval answer is not the call that was asked about",
    });
    expect(answers).toEqual([]);
    expect(desk.answer(token, "write_file", args, yes)).toEqual({ callId: "mcp-1" });
    expect(desk.answer(token, "write_file", args, yes)).toHaveProperty("error");
    expect(answers.map((a) => a.decision)).toEqual(["allow"]);
  });
});
