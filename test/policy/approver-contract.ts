import { describe, expect, it } from "vitest";
import { deepFreeze } from "../../src/policy/approver.js";
import { callHashOf } from "../../src/runtime/authorize.js";
import type { ApprovalDecision, ApprovalPort, ApprovalRequest } from "../../src/runtime/ports.js";

/**
 * What a person (or the program in a person's place) answers a question with. `prefix`: the
 * offered command prefix for the session; `malformed`: an answer that is no answer ("maybe", a
 * callback returning a string, an elicitation with `approve: "yes"`).
 */
export type PersonAnswer = "once" | "session" | "prefix" | "deny" | "malformed";

/** The person an approver asks, as a test plays them. */
export interface Person {
  /** Resolves once the question about `callId` waits for an answer. */
  asked(callId: string): Promise<void>;
  /** Answer the waiting question about `callId`. */
  answer(callId: string, answer: PersonAnswer): void;
  /** Whether this person can pick an offered command prefix (a terminal can; the wire cannot). */
  prefix: boolean;
  /**
   * What a malformed answer does: denies at once, or is ignored and the question stays open (a
   * terminal in raw mode ignores keys that are no answer).
   */
  malformed: "denies" | "ignored";
  /** Whether questions are asked one at a time (a terminal), or all wait together (the wire). */
  serial: boolean;
  /** Break the way to the person while a question waits: an input error, a throwing callback, a client gone. */
  fail?(callId: string): void;
}

export interface ApproverUnderTest {
  approver: ApprovalPort;
  /** Who it asks; absent for an approver that decides alone (nobody to ask). */
  person?: Person;
  /** The id of a new call (an approver may answer only calls it knows of, as a served session). */
  newCall?(): string;
}

/** Builds a fresh approver, with a fresh person, for each test. */
export type ApproverFactory = () => ApproverUnderTest;

/** A shell call, as the runtime asks about it: deep-frozen, so an approver that changes it throws. */
export function askFor(callId: string, command = "npm test", pattern?: string): ApprovalRequest {
  const args = { command };
  return deepFreeze({
    callId,
    tool: "shell",
    arguments: args,
    effect: "process_execution",
    callHash: callHashOf("shell", args),
    subject: { kind: "command", value: command },
    reason: "shell mode is ask",
    display: { command, cwd: ".", timeoutMs: 120_000, sandbox: "bwrap" },
    ...(pattern === undefined ? {} : { pattern }),
  });
}

/**
 * The shape every decision has, whatever was answered: allow or deny, once or for the session,
 * by someone; a deny grants nothing (once, no pattern); a pattern is only ever the one the
 * request offered, on a session allow, so an approval never covers more than the request asked.
 */
export function expectWellFormed(decision: ApprovalDecision, request: ApprovalRequest): void {
  expect(["allow", "deny"]).toContain(decision.decision);
  expect(["once", "session"]).toContain(decision.scope);
  expect(typeof decision.by).toBe("string");
  expect(decision.by).not.toBe("");
  if (decision.reason !== undefined) expect(typeof decision.reason).toBe("string");
  if (decision.decision === "deny") {
    expect(decision.scope).toBe("once");
    expect(decision.pattern).toBeUndefined();
  }
  if (decision.pattern !== undefined) {
    expect(decision).toMatchObject({ decision: "allow", scope: "session" });
    expect(decision.pattern).toBe(request.pattern);
  }
}

const open = () => new AbortController().signal;

function aborted(): AbortSignal {
  const controller = new AbortController();
  controller.abort();
  return controller.signal;
}

/** The contract of the approver seam (ApprovalPort), which every approver passes. */
export function approverContract(name: string, factory: ApproverFactory): void {
  const callOf = (underTest: ApproverUnderTest, n: number) => underTest.newCall?.() ?? `call_${n}`;

  /**
   * Ask about one call on a fresh approver and wait until the person sees the question; `decision`
   * awaits the answer and checks its shape.
   */
  async function question(signal: AbortSignal, pattern?: string) {
    const underTest = factory();
    const person = underTest.person as Person;
    const request = askFor(callOf(underTest, 1), "npm test", pattern);
    const pending = underTest.approver.request(request, signal);
    await person.asked(request.callId);
    const decision = async () => {
      const decided = await pending;
      expectWellFormed(decided, request);
      return decided;
    };
    return { person, callId: request.callId, decision };
  }

  /** Ask about one call and let the person answer; an ignored answer is followed by a no. */
  async function decided(answer: PersonAnswer, pattern?: string): Promise<ApprovalDecision> {
    const { person, callId, decision } = await question(open(), pattern);
    person.answer(callId, answer);
    if (answer === "malformed" || (answer === "prefix" && pattern === undefined)) {
      // A question that ignores it stays open: only the answer after it decides.
      if (person.malformed === "ignored") person.answer(callId, "deny");
    }
    return decision();
  }

  describe(`ApprovalPort contract: ${name}`, () => {
    it("denies a call whose signal was aborted before it asked, without waiting for anyone", async () => {
      const underTest = factory();
      const request = askFor(callOf(underTest, 1));
      const decision = await underTest.approver.request(request, aborted());
      expectWellFormed(decision, request);
      expect(decision.decision).toBe("deny");
    });

    if (factory().person === undefined) {
      it("with nobody to ask, denies every call, whatever it is and whatever it offers", async () => {
        const underTest = factory();
        const requests = [
          askFor(callOf(underTest, 1)),
          askFor(callOf(underTest, 2), "npm run build", "npm *"),
        ];
        for (const request of requests) {
          const decision = await underTest.approver.request(request, open());
          expectWellFormed(decision, request);
          expect(decision.decision).toBe("deny");
        }
      });
      return;
    }

    const person = factory().person as Person;

    it("allows once when the person says once", async () => {
      expect(await decided("once")).toMatchObject({ decision: "allow", scope: "once" });
    });

    it("allows for the session, on the exact subject (no pattern), when the person says session", async () => {
      const decision = await decided("session", "npm test*");
      expect(decision).toMatchObject({ decision: "allow", scope: "session" });
      expect(decision.pattern).toBeUndefined();
    });

    it("denies when the person says no", async () => {
      expect(await decided("deny", "npm test*")).toMatchObject({ decision: "deny" });
    });

    it("never takes a malformed answer for a yes", async () => {
      expect((await decided("malformed")).decision).toBe("deny");
    });

    if (person.prefix) {
      it("grants exactly the offered pattern when the person picks the prefix", async () => {
        expect(await decided("prefix", "npm test*")).toEqual(
          expect.objectContaining({ decision: "allow", scope: "session", pattern: "npm test*" }),
        );
      });

      it("grants no pattern when the request offered none, whatever the person picks", async () => {
        expect((await decided("prefix")).pattern).toBeUndefined();
      });
    }

    it("denies a waiting question when the signal aborts", async () => {
      const controller = new AbortController();
      const { decision } = await question(controller.signal);
      controller.abort();
      expect((await decision()).decision).toBe("deny");
    });

    if (person.fail !== undefined) {
      it("denies (never rejects) when the way to the person breaks while it waits", async () => {
        const { person: p, callId, decision } = await question(open());
        p.fail?.(callId);
        expect((await decision()).decision).toBe("deny");
      });
    }

    it("answers each of two waiting calls exactly once, with the answer given to that call", async () => {
      const underTest = factory();
      const p = underTest.person as Person;
      const first = askFor(callOf(underTest, 1), "npm test");
      const second = askFor(callOf(underTest, 2), "rm -rf build");
      const settled: string[] = [];
      const pendingFirst = underTest.approver.request(first, open()).then((decision) => {
        settled.push(first.callId);
        return decision;
      });
      const pendingSecond = underTest.approver.request(second, open()).then((decision) => {
        settled.push(second.callId);
        return decision;
      });
      if (p.serial) {
        // One question at a time: the second is asked only once the first is answered.
        await p.asked(first.callId);
        p.answer(first.callId, "once");
        await p.asked(second.callId);
        p.answer(second.callId, "deny");
      } else {
        // Both wait together: answering the second first must not answer the first.
        await p.asked(first.callId);
        await p.asked(second.callId);
        p.answer(second.callId, "deny");
        const denied = await pendingSecond;
        expect(settled).toEqual([second.callId]);
        expect(denied.decision).toBe("deny");
        p.answer(first.callId, "once");
      }
      const [one, two] = await Promise.all([pendingFirst, pendingSecond]);
      expectWellFormed(one, first);
      expectWellFormed(two, second);
      expect(one).toMatchObject({ decision: "allow", scope: "once" });
      expect(two.decision).toBe("deny");
      expect([...settled].sort()).toEqual([first.callId, second.callId].sort());
    });
  });
}
