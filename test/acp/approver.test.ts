import { describe, expect, it } from "vitest";
import { AcpApprover, offersFor, type PermissionQuestion } from "../../src/acp/approver.js";
import { approverContract, askFor, type PersonAnswer } from "../policy/approver-contract.js";

/** An editor answering `session/request_permission`, as a test plays it. */
function editor(available = true) {
  const waiting = new Map<
    string,
    { question: PermissionQuestion; settle(answer: unknown): void; fail(): void }
  >();
  const waiters: Array<() => void> = [];
  const asked: PermissionQuestion[] = [];
  const approver = new AcpApprover({
    available,
    preview: async () => undefined,
    ask: (question) =>
      new Promise((resolve, reject) => {
        asked.push(question);
        const callId = question.request.callId;
        waiting.set(callId, {
          question,
          settle: (answer) => {
            waiting.delete(callId);
            resolve(answer);
          },
          fail: () => reject(new Error("the client went away")),
        });
        for (const wake of waiters.splice(0)) wake();
      }),
  });
  return { approver, waiting, waiters, asked };
}

const KINDS: Record<Exclude<PersonAnswer, "prefix">, string> = {
  once: "allow_once",
  session: "allow_always",
  deny: "reject_once",
  malformed: "maybe",
};

approverContract("the ACP approver (session/request_permission)", () => {
  const { approver, waiting, waiters } = editor();
  return {
    approver,
    person: {
      async asked(callId) {
        while (!waiting.has(callId)) await new Promise<void>((resolve) => waiters.push(resolve));
      },
      answer(callId, answer) {
        if (answer === "prefix") throw new Error("ACP offers no prefix");
        const entry = waiting.get(callId);
        if (!entry) throw new Error(`nothing asked about ${callId}`);
        waiting.delete(callId);
        const offered = entry.question.options.find((option) => option.kind === KINDS[answer]);
        entry.settle({ outcome: { outcome: "selected", optionId: offered?.optionId ?? "maybe" } });
      },
      fail(callId) {
        waiting.get(callId)?.fail();
      },
      prefix: false,
      malformed: "denies",
      serial: false,
    },
  };
});

approverContract("the ACP approver with a client that cannot answer", () => ({
  approver: editor(false).approver,
}));

describe("the ACP approver's binding", () => {
  it("denies an answer naming another call's option, and a cancelled request", async () => {
    const { approver, waiting, waiters } = editor();
    const request = askFor("c1");
    const other = askFor("c2", "rm -rf build");
    const pending = approver.request(request, new AbortController().signal);
    while (!waiting.has("c1")) await new Promise<void>((resolve) => waiters.push(resolve));
    waiting
      .get("c1")
      ?.settle({ outcome: { outcome: "selected", optionId: offersFor(other.callHash)[0]?.optionId } });
    expect(await pending).toMatchObject({ decision: "deny" });
    const again = approver.request(request, new AbortController().signal);
    while (!waiting.has("c1")) await new Promise<void>((resolve) => waiters.push(resolve));
    waiting.get("c1")?.settle({ outcome: { outcome: "cancelled" } });
    expect(await again).toMatchObject({ decision: "deny" });
  });

  it("makes reject_always a session deny for that subject: not asked again", async () => {
    const { approver, waiting, waiters, asked } = editor();
    const request = askFor("c1");
    const pending = approver.request(request, new AbortController().signal);
    while (!waiting.has("c1")) await new Promise<void>((resolve) => waiters.push(resolve));
    const reject = waiting.get("c1")?.question.options.find((option) => option.kind === "reject_always");
    waiting.get("c1")?.settle({ outcome: { outcome: "selected", optionId: reject?.optionId } });
    expect(await pending).toMatchObject({ decision: "deny" });
    expect(await approver.request(askFor("c3"), new AbortController().signal)).toMatchObject({
      decision: "deny",
    });
    expect(asked).toHaveLength(1);
    // Another subject is still asked.
    void approver.request(askFor("c4", "npm run build"), new AbortController().signal);
    while (!waiting.has("c4")) await new Promise<void>((resolve) => waiters.push(resolve));
    expect(asked).toHaveLength(2);
  });
});
