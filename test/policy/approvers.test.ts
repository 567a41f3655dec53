import { PassThrough } from "node:stream";
import { TerminalSteering } from "../../src/cli/run-steering.js";
import { ApprovalDesk } from "../../src/mcp-server/approvals.js";
import { runToolApprover } from "../../src/mcp-server/run-tool.js";
import { ServedSession } from "../../src/mcp-server/served-session.js";
import { DenyApprover, FunctionApprover } from "../../src/policy/approver.js";
import { TtyApprover } from "../../src/policy/tty-approver.js";
import type { ApprovalRequest } from "../../src/runtime/ports.js";
import { WireApprover, type WireDecision } from "../../src/server/approvals.js";
import { UiApprover } from "../../src/ui/approval.js";
import { LineUi } from "../../src/ui/line-ui.js";
import { PLAIN } from "../ui/contract.js";
import { approverContract, type Person, type PersonAnswer } from "./approver-contract.js";

/* Every approver in src runs the one approver contract, each with the person it really asks. */

/** Wakes whoever waits for `ready()` to become true each time `changed()` is called. */
function condition() {
  const waiters: Array<() => void> = [];
  return {
    changed: () => {
      for (const wake of waiters.splice(0)) wake();
    },
    async until(ready: () => boolean): Promise<void> {
      while (!ready()) await new Promise<void>((resolve) => waiters.push(resolve));
    },
  };
}

/** A terminal's input: a pipe, or a TTY in raw mode where one key answers. */
function terminalInput(raw: boolean): PassThrough {
  const input = new PassThrough();
  if (!raw) return input;
  return Object.assign(input, {
    isTTY: true,
    isRaw: false,
    setRawMode(this: { isRaw: boolean }, mode: boolean) {
      this.isRaw = mode;
      return this;
    },
  });
}

const LINES: Record<PersonAnswer, string> = {
  once: "y\n",
  session: "s\n",
  prefix: "p\n",
  deny: "n\n",
  malformed: "maybe\n",
};
const KEYS: Record<PersonAnswer, string> = {
  once: "y",
  session: "s",
  prefix: "p",
  deny: "n",
  malformed: "x",
};

/**
 * A person at a screen whose questions end in "Allow?": the n-th call asked about is the n-th
 * question shown (questions come one at a time).
 */
function personAtScreen(input: PassThrough, output: PassThrough, raw: boolean): Person {
  let screen = "";
  const shown = condition();
  output.setEncoding("utf8").on("data", (chunk: string) => {
    screen += chunk;
    shown.changed();
  });
  const order: string[] = [];
  return {
    async asked(callId) {
      if (!order.includes(callId)) order.push(callId);
      await shown.until(() => screen.split("Allow?").length - 1 > order.indexOf(callId));
    },
    answer: (_callId, answer) => input.write((raw ? KEYS : LINES)[answer]),
    prefix: true,
    malformed: raw ? "ignored" : "denies",
    serial: true,
    fail: () => input.destroy(new Error("EIO")),
  };
}

function tty(raw: boolean) {
  const input = terminalInput(raw);
  const output = new PassThrough();
  return { approver: new TtyApprover(input, output), person: personAtScreen(input, output, raw) };
}

approverContract("DenyApprover", () => ({ approver: new DenyApprover() }));

approverContract("harness_run's approver (runToolApprover)", () => ({ approver: runToolApprover }));

approverContract("a served session whose MCP client cannot elicit", () => {
  const session = new ServedSession("s-mute");
  return {
    approver: session.approver,
    newCall: () => session.submit("shell", { command: "npm test" }, false),
  };
});

approverContract("TtyApprover on a pipe (a line answers)", () => tty(false));

approverContract("TtyApprover on a terminal (a key answers)", () => tty(true));

approverContract("harness run's steering, wrapping the terminal approver", () => {
  const input = terminalInput(true);
  const output = new PassThrough();
  const steering = new TerminalSteering(input as unknown as NodeJS.ReadStream, new PassThrough());
  steering.start(async () => {});
  return {
    approver: steering.wrap(new TtyApprover(input, output)),
    person: personAtScreen(input, output, true),
  };
});

approverContract("the chat's UiApprover on the line UI", () => {
  const input = new PassThrough();
  const output = new PassThrough();
  const ui = new LineUi(input, output, PLAIN);
  ui.start({ submit: () => undefined, interrupt: () => {}, exit: () => {} });
  return {
    approver: new UiApprover(ui, PLAIN, async () => undefined),
    person: personAtScreen(input, output, false),
  };
});

approverContract("FunctionApprover", () => {
  const waiting = new Map<
    string,
    { request: ApprovalRequest; resolve(answer: unknown): void; reject(error: Error): void }
  >();
  const called = condition();
  const approver = new FunctionApprover(
    (request) =>
      new Promise<unknown>((resolve, reject) => {
        waiting.set(request.callId, { request, resolve, reject });
        called.changed();
      }),
  );
  const callback = (callId: string) => {
    const found = waiting.get(callId);
    if (found === undefined) throw new Error(`no question about ${callId}`);
    return found;
  };
  return {
    approver,
    person: {
      asked: (callId) => called.until(() => waiting.has(callId)),
      answer(callId, answer) {
        const { request, resolve } = callback(callId);
        const answers: Record<PersonAnswer, unknown> = {
          once: true,
          session: { decision: "allow", scope: "session" },
          // A callback may name any pattern; only the offered one may come out.
          prefix: { decision: "allow", scope: "session", pattern: request.pattern ?? "*" },
          deny: false,
          malformed: "yes please",
        };
        resolve(answers[answer]);
      },
      prefix: true,
      malformed: "denies",
      serial: false,
      fail: (callId) => callback(callId).reject(new Error("the callback broke")),
    },
  };
});

approverContract("the server's WireApprover", () => {
  const changed = condition();
  const approver = new WireApprover("s", () => undefined, changed.changed);
  const id = (callId: string) => `s:${callId}`;
  const malformed: string = "maybe";
  const decisions: Record<Exclude<PersonAnswer, "prefix">, WireDecision> = {
    once: "accept",
    session: "accept_session",
    deny: "decline",
    malformed: malformed as WireDecision,
  };
  return {
    approver,
    person: {
      asked: (callId) => changed.until(() => approver.has(id(callId))),
      answer(callId, answer) {
        if (answer === "prefix") throw new Error("the wire offers no prefix");
        approver.respond(id(callId), decisions[answer], "alice");
      },
      prefix: false,
      malformed: "denies",
      serial: false,
    },
  };
});

approverContract("a served session asking its MCP client by elicitation", () => {
  const session = new ServedSession("s-elicit");
  const desk = new ApprovalDesk();
  const tokens = new Map<string, { token: string; request: ApprovalRequest }>();
  const responses: Record<Exclude<PersonAnswer, "prefix">, Record<string, unknown>> = {
    once: { approval: { action: "accept", content: { approve: true } } },
    session: { approval: { action: "accept", content: { approve: true, remember: true } } },
    deny: { approval: { action: "decline" } },
    malformed: { approval: { action: "accept", content: { approve: "yes" } } },
  };
  return {
    approver: session.approver,
    newCall: () => session.submit("shell", { command: "npm test" }, true),
    person: {
      async asked(callId) {
        const next = await session.next(callId);
        if (next.kind !== "approval") throw new Error(`expected a question, got ${next.kind}`);
        const { request } = next.ask;
        const { requestState } = desk.ask(callId, request.tool, request.arguments, next.ask);
        if (requestState === undefined) throw new Error("the question carries no state token");
        tokens.set(callId, { token: requestState, request });
      },
      answer(callId, answer) {
        const asked = tokens.get(callId);
        if (asked === undefined || answer === "prefix")
          throw new Error(`cannot answer ${callId} with ${answer}`);
        desk.answer(asked.token, asked.request.tool, asked.request.arguments, responses[answer]);
      },
      prefix: false,
      malformed: "denies",
      serial: false,
      fail: () => void session.close(),
    },
  };
});
