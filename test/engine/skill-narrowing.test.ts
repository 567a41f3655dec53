import { describe, expect, it } from "vitest";
import { type ActiveSkill, SkillNarrowing } from "../../src/engine/skills.js";
import type { PermissionDecision, PermissionPort, PermissionRequest } from "../../src/runtime/ports.js";
import { allowedToolRules } from "../../src/session/extensions/allowed-tools.js";

/** A session policy that allows everything, splitting `a && b` into parts as the real one does. */
const allowAll: PermissionPort = {
  decide(request: PermissionRequest): PermissionDecision {
    const command = typeof request.arguments.command === "string" ? request.arguments.command : undefined;
    return {
      decision: "allow",
      source: "test",
      reason: "allowed",
      ...(command
        ? {
            parts: command
              .split(/\s*(?:&&|;)\s*/)
              .map((part) => ({ command: part, decision: "allow" as const, grantable: true })),
          }
        : {}),
    };
  },
};
const denyShell: PermissionPort = {
  decide: (request) =>
    request.tool === "shell"
      ? { decision: "deny", source: "test", reason: "shell denied" }
      : { decision: "allow", source: "test", reason: "allowed" },
};
const skill = (allowed: string): ActiveSkill => {
  const rules = allowedToolRules(allowed, "skill s");
  if ("problem" in rules) throw new Error(rules.problem);
  return {
    name: "s",
    digest: "0".repeat(64),
    source: "project",
    call_id: "c1",
    allowed_tools: rules.rules,
    text: "",
  };
};
const decide = (port: PermissionPort, tool: string, args: Record<string, string>) =>
  Promise.resolve(
    port.decide({ tool, effect: tool === "shell" ? "process_execution" : "read_only", arguments: args }),
  );

describe("allowed-tools narrows, never widens", () => {
  it("a call outside the active skill's rules is denied; inside, the session decides", async () => {
    const port = new SkillNarrowing(allowAll, () => [skill("read_file shell(npm test*)")]);
    expect((await decide(port, "read_file", { path: "a" })).decision).toBe("allow");
    expect((await decide(port, "shell", { command: "npm test -- a" })).decision).toBe("allow");
    const denied = await decide(port, "write_file", { path: "a" });
    expect(denied.decision).toBe("deny");
    expect(denied.reason).toContain('active skill "s"');
  });

  it("a shell line matches only when each of its commands does", async () => {
    const port = new SkillNarrowing(allowAll, () => [skill("shell(npm test*)")]);
    expect((await decide(port, "shell", { command: "npm test && rm -rf ~" })).decision).toBe("deny");
  });

  it("shell(*) does not widen a session that denies shell; the skill tool stays callable", async () => {
    const port = new SkillNarrowing(denyShell, () => [skill("shell(*)")]);
    const decision = await decide(port, "shell", { command: "touch x" });
    expect(decision).toMatchObject({ decision: "deny", reason: "shell denied" });
    expect((await decide(port, "skill", { name: "other" })).decision).toBe("allow");
  });

  it("other agents' names are read as harness's", () => {
    expect(allowedToolRules("Read, Grep Bash(git:*)", "x")).toEqual({
      rules: ["read_file", "grep", "shell(git*)"],
    });
  });
});
