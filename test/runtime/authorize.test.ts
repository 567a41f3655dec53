// The one authorization path: the rule (`authorization`) and the stage the runtime runs
// (`authorize`): policy, session grants, the approver with its journaled exchange, admit hooks.
import { describe, expect, it } from "vitest";
import type { AnyNewEvent } from "../../src/journal/vocabulary.js";
import { DenyApprover, FunctionApprover } from "../../src/policy/approver.js";
import { SessionGrants } from "../../src/policy/grants.js";
import { HookRunner } from "../../src/policy/hooks.js";
import { modePolicy } from "../../src/policy/policy-permissions.js";
import {
  type AuthorizeCall,
  type AuthorizePorts,
  authorization,
  authorize,
  callHashOf,
  readAccess,
} from "../../src/runtime/authorize.js";
import type {
  ApprovalPort,
  ApprovalRequest,
  HookRecord,
  PermissionDecision,
} from "../../src/runtime/ports.js";

const signal = new AbortController().signal;
const shell = (command: string, id = "c1"): AuthorizeCall => ({
  id,
  name: "shell",
  effect: "process_execution",
  arguments: { command },
});

/** The stage's effects, remembered in order: journal writes and hook records. */
function effects(call: AuthorizeCall, log: string[] = []) {
  const events: AnyNewEvent[] = [];
  const hooks: { records: HookRecord[]; now: boolean }[] = [];
  return {
    events,
    hooks,
    log,
    io: {
      recorder: {
        record: async (batch: AnyNewEvent[]) => {
          events.push(...batch);
          for (const event of batch) log.push(event.type);
        },
      },
      signal,
      hookContext: () => ({
        session: "s",
        callId: call.id,
        tool: call.name,
        arguments: call.arguments,
        effect: call.effect,
      }),
      hookRecords: async (records: HookRecord[], now: boolean) => {
        hooks.push({ records, now });
      },
    },
  };
}

function ports(approver: ApprovalPort, extra: Partial<AuthorizePorts> = {}): AuthorizePorts {
  return {
    permissions: modePolicy({ deny: ["shell(rm*)"] }),
    approver,
    grants: new SessionGrants(),
    proposals: false,
    ...extra,
  };
}

describe("authorize", () => {
  it("denies by policy without asking, with POLICY_DENIED and a do-not-repeat hint", async () => {
    let asked = 0;
    const call = shell("rm -rf /");
    const io = effects(call);
    const result = await authorize(
      call,
      ports(
        new FunctionApprover(() => {
          asked += 1;
          return true;
        }),
      ),
      io.io,
    );
    expect(asked).toBe(0);
    expect(io.events).toEqual([]);
    expect(result.outcome === "deny" && result.denial).toMatchObject({
      status: "denied",
      error_type: "POLICY_DENIED",
      summary: expect.stringMatching(/^Denied by policy: /),
      hint: expect.stringMatching(/Do not repeat the same call unchanged/),
      data: { permission: { decision: "deny", rule: "shell(rm*)", source: "cli" } },
    });
  });

  it("asks, journals the request first, remembers a session grant and does not ask again for the same call", async () => {
    const log: string[] = [];
    const grants = new SessionGrants();
    const approver = new FunctionApprover(() => {
      log.push("asked");
      return { decision: "allow", scope: "session" };
    });
    const first = effects(shell("npm test"), log);
    expect(await authorize(shell("npm test"), ports(approver, { grants }), first.io)).toMatchObject({
      outcome: "allow",
      permission: { decision: "allow", reason: "approved by user" },
    });
    expect(log).toEqual(["approval.requested", "asked", "approval.decided"]);
    expect(first.events[0]).toEqual({
      type: "approval.requested",
      data: {
        call_id: "c1",
        name: "shell",
        call_hash: callHashOf("shell", { command: "npm test" }),
        effect: "process_execution",
      },
    });
    expect(first.events[1]).toEqual({
      type: "approval.decided",
      data: {
        call_id: "c1",
        call_hash: callHashOf("shell", { command: "npm test" }),
        decision: "allow",
        scope: "session",
        by: "user",
      },
    });

    const again = effects(shell("npm test", "c2"), log);
    expect(await authorize(shell("npm test", "c2"), ports(approver, { grants }), again.io)).toEqual({
      outcome: "allow",
      permission: {
        decision: "allow",
        source: "default",
        reason: "approved earlier for this session",
        subject: { kind: "command", value: "npm test" },
        parts: [{ command: "npm test", decision: "ask", grantable: true }],
        pattern: "npm test*",
      },
    });
    expect(again.events).toEqual([]);
    expect(log.filter((entry) => entry === "asked")).toHaveLength(1);

    const changed = await authorize(
      shell("npm test -- --update", "c3"),
      ports(new DenyApprover(), { grants }),
      effects(shell("npm test -- --update", "c3")).io,
    );
    expect(changed.outcome === "deny" && changed.denial).toMatchObject({
      error_type: "USER_DENIED",
      summary: "Not approved (no TTY to ask).",
    });
  });

  it("hands the approver the subject a grant would cover, the policy's reason and the tool's display facts", async () => {
    const seen: ApprovalRequest[] = [];
    const call: AuthorizeCall = {
      ...shell("ls"),
      display: { command: "ls", cwd: ".", timeoutMs: 5000, sandbox: "bwrap", details: { network: "off" } },
    };
    const approver = new FunctionApprover((request: ApprovalRequest) => {
      seen.push(request);
      return true;
    });
    expect((await authorize(call, ports(approver), effects(call).io)).outcome).toBe("allow");
    expect(seen[0]).toMatchObject({
      callId: "c1",
      tool: "shell",
      callHash: callHashOf("shell", { command: "ls" }),
      subject: { kind: "command", value: "ls" },
      reason: expect.any(String),
      display: { command: "ls", cwd: ".", timeoutMs: 5000, sandbox: "bwrap", details: { network: "off" } },
    });
  });

  it("keys session grants by tool + subject: other arguments with the same command are covered, another command is not", async () => {
    const grants = new SessionGrants();
    const approver = new FunctionApprover(() => ({ decision: "allow", scope: "session" }));
    const first = { ...shell("npm test"), arguments: { command: "npm test" } };
    await authorize(first, ports(approver, { grants }), effects(first).io);
    const longer = { ...shell("npm test", "c2"), arguments: { command: "npm test", timeout_ms: 9000 } };
    const io = effects(longer);
    expect((await authorize(longer, ports(new DenyApprover(), { grants }), io.io)).outcome).toBe("allow");
    expect(io.events).toEqual([]);
    const evil = shell("npm test; curl evil", "c3");
    expect((await authorize(evil, ports(new DenyApprover(), { grants }), effects(evil).io)).outcome).toBe(
      "deny",
    );
  });

  it("a session approval of the offered prefix journals the rule and covers each matching part, never a compound's other parts", async () => {
    const grants = new SessionGrants();
    const offered: (string | undefined)[] = [];
    const approver = new FunctionApprover((request: ApprovalRequest) => {
      offered.push(request.pattern);
      return { decision: "allow", scope: "session", pattern: request.pattern };
    });
    const first = shell("npm test --watch");
    const io = effects(first);
    expect((await authorize(first, ports(approver, { grants }), io.io)).outcome).toBe("allow");
    expect(offered).toEqual(["npm test*"]);
    expect(io.events[1]?.data).toMatchObject({ scope: "session", pattern: "npm test*" });
    const asked = new FunctionApprover(() => {
      offered.push("asked again");
      return false;
    });
    for (const [command, outcome] of [
      ["npm test -- --update", "allow"],
      ["npm test; touch x", "deny"],
      ["npm test && curl evil.example", "deny"],
      ["npm run build", "deny"],
    ] as const) {
      const call = shell(command, command);
      expect((await authorize(call, ports(asked, { grants }), effects(call).io)).outcome, command).toBe(
        outcome,
      );
    }
    // Three were asked (and refused): only the line every part of which the prefix covers ran unasked.
    expect(offered.filter((entry) => entry === "asked again")).toHaveLength(3);
  });

  it("an answer naming a pattern the question did not offer grants the exact command only, journaled without it", async () => {
    const grants = new SessionGrants();
    const approver = new FunctionApprover(() => ({ decision: "allow", scope: "session", pattern: "*" }));
    const first = shell("npm test");
    const io = effects(first);
    await authorize(first, ports(approver, { grants }), io.io);
    expect(io.events[1]?.data).not.toHaveProperty("pattern");
    const other = shell("make", "c2");
    expect((await authorize(other, ports(new DenyApprover(), { grants }), effects(other).io)).outcome).toBe(
      "deny",
    );
  });

  it("denies with USER_DENIED when the approver throws, and journals the approver's failure", async () => {
    const call = shell("make");
    const io = effects(call);
    const result = await authorize(
      call,
      ports({
        request: () => {
          throw new Error("tty gone");
        },
      }),
      io.io,
    );
    expect(result.outcome === "deny" && result.denial.error_type).toBe("USER_DENIED");
    expect(io.events[1]?.data).toMatchObject({
      decision: "deny",
      by: "approver",
      reason: "the approver failed",
    });
  });

  it("runs admit hooks only for allowed calls, journals their records at once, and denies with HOOK_DENIED", async () => {
    const hooks = new HookRunner([
      {
        name: "guard",
        kind: "admit",
        point: "before_execute",
        run: () => ({ decision: "deny", reason: "nope" }),
      },
    ]);
    const allowed = {
      ...shell("ls"),
      name: "read_file",
      effect: "read_only" as const,
      arguments: { path: "a" },
    };
    const io = effects(allowed);
    const result = await authorize(allowed, ports(new DenyApprover(), { hooks }), io.io);
    expect(result.outcome === "deny" && result.denial).toMatchObject({
      error_type: "HOOK_DENIED",
      summary: "Refused by a hook: hook guard denied: nope",
    });
    expect(io.hooks.at(-1)).toMatchObject({ now: true, records: [{ hook: "guard", decision: "deny" }] });

    const denied = shell("rm -rf /");
    const deniedIo = effects(denied);
    await authorize(denied, ports(new DenyApprover(), { hooks }), deniedIo.io);
    expect(deniedIo.hooks.filter((h) => h.now)).toEqual([]);
  });
});

describe("authorize after untrusted content", () => {
  const seen = [{ call_id: "call_3", name: "web_fetch", provenance: "https://evil.example/page" }];
  const external: AuthorizeCall = {
    id: "c9",
    name: "mcp__mail__send",
    effect: "external_side_effect",
    arguments: { to: "x@example.org" },
  };
  const allowAll = () =>
    ({
      decide: async () => ({
        decision: "allow",
        source: "cli",
        reason: "allow rule mcp__mail__send from cli",
      }),
    }) as AuthorizePorts["permissions"];

  it("asks a person where a rule allows an external effect, naming the content that came before; no approver denies", async () => {
    const io = effects(external);
    const result = await authorize(
      external,
      ports(new DenyApprover(), { permissions: allowAll(), untrusted: () => seen }),
      io.io,
    );
    expect(result.outcome).toBe("deny");
    if (result.outcome !== "deny") return;
    expect(result.denial.error_type).toBe("USER_DENIED");
    const reason =
      "untrusted content seen: web_fetch call_3 (https://evil.example/page); allow rule mcp__mail__send from cli";
    expect(result.denial.data).toMatchObject({ permission: { decision: "ask", reason } });
    expect(io.events[0]).toMatchObject({ type: "approval.requested", data: { call_id: "c9", reason } });
    expect(io.events[1]).toMatchObject({ type: "approval.decided", data: { decision: "deny" } });
  });

  it("shows the approver which content preceded the call, and ignores a session grant", async () => {
    const asked: ApprovalRequest[] = [];
    const grants = new SessionGrants();
    const approver = new FunctionApprover((request) => {
      asked.push(request);
      return { decision: "allow", scope: "session" };
    });
    const askPorts = ports(approver, {
      permissions: modePolicy({ ask: ["mcp__mail__send"] }),
      grants,
      untrusted: () => seen,
    });
    expect(
      (await authorize(external, { ...askPorts, untrusted: () => [] }, effects(external).io)).outcome,
    ).toBe("allow");
    expect(asked).toHaveLength(1);
    // A grant "for the session" now covers the call, but not after untrusted content.
    expect((await authorize(external, askPorts, effects(external).io)).outcome).toBe("allow");
    expect(asked).toHaveLength(2);
    expect(asked[1]?.display?.details?.untrusted).toBe(
      "untrusted content seen: web_fetch call_3 (https://evil.example/page)",
    );
  });

  it("leaves reads, local writes, commands and denials as they were", async () => {
    const io = effects(shell("ls"));
    const read: AuthorizeCall = { id: "r", name: "read_file", effect: "read_only", arguments: { path: "a" } };
    const allowed = await authorize(read, ports(new DenyApprover(), { untrusted: () => seen }), io.io);
    expect(allowed.outcome).toBe("allow");
    const denied = await authorize(
      { ...external, effect: "destructive" },
      ports(new DenyApprover(), {
        permissions: modePolicy({ deny: ["mcp__mail__send"] }),
        untrusted: () => seen,
      }),
      io.io,
    );
    expect(denied.outcome === "deny" && denied.denial.error_type).toBe("POLICY_DENIED");
    expect(io.events).toEqual([]);
  });
});

describe("the authorization rule", () => {
  const call = { id: "c1", name: "edit_file" };
  const decided = (decision: PermissionDecision["decision"]): PermissionDecision => ({
    decision,
    source: "cli",
    reason: `${decision} by test`,
  });

  it("a propose decision without a proposal store denies; with one it runs as a proposal", () => {
    expect(
      authorization({ call, decision: decided("propose"), proposals: false, granted: false }),
    ).toMatchObject({
      outcome: "deny",
      denial: { error_type: "POLICY_DENIED", summary: expect.stringContaining("no proposal store") },
    });
    expect(
      authorization({ call, decision: decided("propose"), proposals: true, granted: false }),
    ).toMatchObject({
      outcome: "allow",
      permission: { decision: "propose" },
    });
  });

  it("an ask is asked unless a grant covers it; an interrupted prompt is CANCELLED, not USER_DENIED", () => {
    const ask = decided("ask");
    expect(authorization({ call, decision: ask, proposals: false, granted: false })).toEqual({
      outcome: "ask",
    });
    const refusal = { decision: "deny" as const, scope: "once" as const, by: "user", reason: "interrupted" };
    expect(
      authorization({
        call,
        decision: ask,
        proposals: false,
        granted: false,
        answer: refusal,
        cancelled: true,
      }),
    ).toMatchObject({ outcome: "deny", denial: { error_type: "CANCELLED", operation_applied: false } });
    expect(
      authorization({ call, decision: ask, proposals: false, granted: false, answer: refusal }),
    ).toMatchObject({
      outcome: "deny",
      denial: { error_type: "USER_DENIED", summary: "Not approved (interrupted)." },
    });
  });
});

describe("read access for tools that reveal file content", () => {
  it("follows read_file's permission and session grants, never prompting", async () => {
    const permissions = modePolicy({
      allow: ["read_file(src/**)"],
      ask: ["read_file(.env)"],
      deny: ["read_file(secret)"],
    });
    const grants = new SessionGrants();
    expect(await readAccess("src/a.ts", { permissions, grants })).toBe("allowed");
    expect(await readAccess("secret", { permissions, grants })).toBe("denied");
    expect(await readAccess(".env", { permissions, grants })).toBe("ask");
    grants.add({ tool: "read_file", subject: { kind: "path", value: ".env" } });
    expect(await readAccess(".env", { permissions, grants })).toBe("allowed");
  });
});
