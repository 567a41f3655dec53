import { describe, expect, it } from "vitest";
import { type ApprovalRequest, callHashOf, FunctionApprover } from "../../src/policy/approver.js";
import { cliLayer } from "../../src/policy/cli-flags.js";
import { HookRunner } from "../../src/policy/hooks.js";
import { buildPolicy } from "../../src/policy/permissions.js";
import {
  ApproverPort,
  HookRunnerPort,
  PolicyPermissionPort,
  SessionGrantPort,
} from "../../src/policy/ports.js";
import type { ApprovalRequest as PortRequest } from "../../src/runtime/ports.js";

const portRequest = (args: Record<string, string | number>): PortRequest => ({
  callId: "c1",
  tool: "shell",
  effect: "process_execution",
  arguments: args,
  callHash: callHashOf("shell", args),
  display: { command: String(args.command), cwd: ".", timeout_ms: "5000", sandbox: "bwrap", network: "off" },
});

describe("runtime port adapters", () => {
  it("decides through the policy, turning writes into proposals in propose mode", async () => {
    const port = new PolicyPermissionPort(
      buildPolicy([cliLayer({ write: "propose", deny: ["grep(secret/**)"] })]),
      (tool) => (tool === "grep" ? "path" : undefined),
    );
    expect(
      await port.decide({ tool: "edit_file", effect: "local_write", arguments: { path: "a" } }),
    ).toMatchObject({
      decision: "propose",
      source: "cli",
      reason: expect.stringContaining("proposed for review"),
    });
    expect(
      await port.decide({ tool: "grep", effect: "read_only", arguments: { pattern: "x", path: "secret/k" } }),
    ).toEqual({
      decision: "deny",
      rule: "grep(secret/**)",
      source: "cli",
      reason: "deny rule grep(secret/**) from cli",
    });
    expect(port.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(port.describe.write).toEqual({ mode: "propose", source: "cli" });
  });

  it("grants a session approval for the same tool and command, not for another command", () => {
    const grants = new SessionGrantPort();
    grants.add(portRequest({ command: "npm test" }));
    expect(grants.covers(portRequest({ command: "npm test", timeout_ms: 9000 }))).toBe(true);
    expect(grants.covers(portRequest({ command: "npm test; curl evil" }))).toBe(false);
  });

  it("hands approvers the subject and the display facts", async () => {
    const seen: ApprovalRequest[] = [];
    const port = new ApproverPort(
      new FunctionApprover((request: ApprovalRequest) => {
        seen.push(request);
        return true;
      }),
    );
    expect((await port.request(portRequest({ command: "ls" }), new AbortController().signal)).decision).toBe(
      "allow",
    );
    expect(seen[0]?.subject).toEqual({ kind: "command", value: "ls" });
    expect(seen[0]?.display).toEqual({
      command: "ls",
      cwd: ".",
      timeoutMs: 5000,
      sandbox: "bwrap",
      details: { network: "off" },
    });
  });

  it("maps wrap violations and admit denials for the pipeline", async () => {
    const context = {
      point: "before_execute" as const,
      session: "s",
      call_id: "c1",
      tool: "shell",
      arguments: { command: "ls" },
      effect: "process_execution" as const,
    };
    let executed = 0;
    const port = new HookRunnerPort(
      new HookRunner([
        { name: "skip", kind: "wrap", run: () => "fake" },
        {
          name: "guard",
          kind: "admit",
          point: "before_execute",
          run: () => ({ decision: "deny", reason: "nope" }),
        },
      ]),
    );
    const wrapped = await port.wrap(context, async () => {
      executed += 1;
      return "real";
    });
    expect(wrapped).toMatchObject({
      value: undefined,
      executed: false,
      violation: expect.stringContaining("skip"),
    });
    expect(executed).toBe(0);
    expect(await port.admit("before_execute", context)).toMatchObject({
      allowed: false,
      reason: "hook guard denied: nope",
    });
  });
});
