import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { DenyApprover, FunctionApprover } from "../../src/policy/approver.js";
import { grantFromDecision, SessionGrants } from "../../src/policy/grants.js";
import { TtyApprover } from "../../src/policy/tty-approver.js";
import { callHashOf } from "../../src/runtime/authorize.js";
import type { ApprovalRequest } from "../../src/runtime/ports.js";

function shellRequest(command = "npm test"): ApprovalRequest {
  const args = { command };
  return {
    callId: "call_1",
    tool: "shell",
    arguments: args,
    effect: "process_execution",
    callHash: callHashOf("shell", args),
    subject: { kind: "command", value: command },
    display: { command, cwd: ".", timeoutMs: 120000, sandbox: "bwrap" },
  };
}

/** A terminal: answers are typed only after the prompt is on screen, as a person would. */
function terminal() {
  const input = new PassThrough();
  const output = new PassThrough();
  let screen = "";
  const waiters: Array<() => void> = [];
  output.on("data", (chunk: Buffer) => {
    screen += chunk.toString("utf8");
    for (const wake of waiters.splice(0)) wake();
  });
  const prompts = () => screen.split("Allow?").length - 1;
  const waitForPrompt = async (count: number) => {
    while (prompts() < count) await new Promise<void>((resolve) => waiters.push(resolve));
  };
  return { input, output, screen: () => screen, waitForPrompt };
}

async function answer(line: string | null): Promise<{ decision: string; scope: string; screen: string }> {
  const tty = terminal();
  const approver = new TtyApprover(tty.input, tty.output);
  const pending = approver.request(shellRequest(), new AbortController().signal);
  await tty.waitForPrompt(1);
  if (line === null) tty.input.end();
  else tty.input.write(line);
  const decision = await pending;
  return { decision: decision.decision, scope: decision.scope, screen: tty.screen() };
}

describe("TtyApprover", () => {
  it.each(["y\n", "yes\n", "YES\n", "  Yes \r\n"])("approves once on %j", async (line) => {
    expect(await answer(line)).toMatchObject({ decision: "allow", scope: "once" });
  });

  it.each(["s\n", "session\n"])("approves for the session on %j", async (line) => {
    expect(await answer(line)).toMatchObject({ decision: "allow", scope: "session" });
  });

  it.each(["Y E S\n", "\n", "n\n", "no\n", "yess\n", "y"])("denies on %j", async (line) => {
    const tty = terminal();
    const approver = new TtyApprover(tty.input, tty.output, { timeoutMs: 60_000 });
    const pending = approver.request(shellRequest(), new AbortController().signal);
    await tty.waitForPrompt(1);
    tty.input.write(line);
    if (!line.endsWith("\n")) tty.input.end();
    expect(await pending).toMatchObject({ decision: "deny", by: "user" });
  });

  it("denies on EOF", async () => {
    expect(await answer(null)).toMatchObject({ decision: "deny" });
  });

  it("denies on an input error and on timeout", async () => {
    const broken = terminal();
    const approver = new TtyApprover(broken.input, broken.output);
    const pending = approver.request(shellRequest(), new AbortController().signal);
    await broken.waitForPrompt(1);
    broken.input.destroy(new Error("EIO"));
    expect(await pending).toMatchObject({ decision: "deny", reason: "the terminal input failed" });

    const silent = terminal();
    const slow = new TtyApprover(silent.input, silent.output, { timeoutMs: 20 });
    expect(await slow.request(shellRequest(), new AbortController().signal)).toMatchObject({
      decision: "deny",
      reason: "no answer in time",
    });
  });

  it("shows the exact command, cwd, timeout, sandbox and effect, escaping terminal controls", async () => {
    const tty = terminal();
    const approver = new TtyApprover(tty.input, tty.output);
    const pending = approver.request(
      {
        ...shellRequest("echo hi\u001b[2J"),
        display: { command: "echo hi\u001b[2J", cwd: "sub", timeoutMs: 5000, sandbox: "bwrap" },
      },
      new AbortController().signal,
    );
    await tty.waitForPrompt(1);
    tty.input.write("n\n");
    await pending;
    const screen = tty.screen();
    expect(screen).toContain("shell (process_execution)");
    expect(screen).toContain("command: echo hi\\x1b[2J");
    expect(screen).toContain("cwd:     sub");
    expect(screen).toContain("timeout: 5000 ms");
    expect(screen).toContain("sandbox: bwrap");
    expect(screen).not.toContain("\u001b");
  });

  it("ignores input typed before the prompt and asks queued requests one at a time", async () => {
    const tty = terminal();
    tty.input.write("y\n");
    const approver = new TtyApprover(tty.input, tty.output);
    const signal = new AbortController().signal;
    const first = approver.request(shellRequest("a"), signal);
    const second = approver.request(shellRequest("b"), signal);
    await tty.waitForPrompt(1);
    expect(tty.screen()).not.toContain("command: b");
    tty.input.write("n\n");
    expect(await first).toMatchObject({ decision: "deny" });
    await tty.waitForPrompt(2);
    tty.input.write("yes\n");
    expect(await second).toMatchObject({ decision: "allow", scope: "once" });
  });
});

describe("other approvers", () => {
  it("DenyApprover denies with 'no TTY to ask'", async () => {
    expect(await new DenyApprover().request()).toEqual({
      decision: "deny",
      scope: "once",
      by: "policy",
      reason: "no TTY to ask",
    });
  });

  it("FunctionApprover denies when the callback throws or answers nonsense, and cannot mutate the request", async () => {
    const signal = new AbortController().signal;
    const throwing = new FunctionApprover(() => {
      throw new Error("boom");
    });
    expect((await throwing.request(shellRequest(), signal)).decision).toBe("deny");
    expect((await new FunctionApprover(() => "sure").request(shellRequest(), signal)).decision).toBe("deny");
    const request = shellRequest();
    const mutating = new FunctionApprover((seen: ApprovalRequest) => {
      (seen.arguments as Record<string, unknown>).command = "rm -rf /";
      return true;
    });
    expect((await mutating.request(request, signal)).decision).toBe("deny");
    expect(request.arguments.command).toBe("npm test");
    expect(
      await new FunctionApprover(() => ({ decision: "allow", scope: "session" })).request(request, signal),
    ).toEqual({
      decision: "allow",
      scope: "session",
      by: "user",
    });
  });
});

describe("session grants", () => {
  it("match only the same tool and the same subject", () => {
    const grants = new SessionGrants();
    grants.add({ tool: "shell", subject: { kind: "command", value: "npm test" } });
    expect(grants.covers({ tool: "shell", subject: { kind: "command", value: "npm test" } })).toBe(true);
    expect(grants.covers({ tool: "shell", subject: { kind: "command", value: "npm test -- x" } })).toBe(
      false,
    );
    expect(grants.covers({ tool: "exec", subject: { kind: "command", value: "npm test" } })).toBe(false);
    expect(grants.covers({ tool: "shell", subject: { kind: "path", value: "npm test" } })).toBe(false);
  });

  it("are rebuilt from journaled session decisions, and only when the hash belongs to the call", () => {
    const call = { tool: "shell", arguments: { command: "npm test" } };
    const hash = callHashOf("shell", call.arguments);
    expect(grantFromDecision(call, { decision: "allow", scope: "session", call_hash: hash })).toEqual({
      tool: "shell",
      subject: { kind: "command", value: "npm test" },
    });
    expect(grantFromDecision(call, { decision: "allow", scope: "once", call_hash: hash })).toBeUndefined();
    expect(grantFromDecision(call, { decision: "deny", scope: "session", call_hash: hash })).toBeUndefined();
    expect(
      grantFromDecision(call, {
        decision: "allow",
        scope: "session",
        call_hash: callHashOf("shell", { command: "ls" }),
      }),
    ).toBeUndefined();
  });
});
