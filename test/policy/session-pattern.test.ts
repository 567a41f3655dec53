import { describe, expect, it } from "vitest";
import { cliLayer } from "../../src/policy/cli-flags.js";
import { grantFromDecision, prepareGrantRestore, SessionGrants } from "../../src/policy/grants.js";
import { buildPolicy } from "../../src/policy/permissions.js";
import { PolicyPermissions } from "../../src/policy/policy-permissions.js";
import { sessionPatternOf } from "../../src/policy/session-pattern.js";
import { callHashOf, grantFor } from "../../src/runtime/authorize.js";
import type { PermissionDecision } from "../../src/runtime/ports.js";

/** Session approvals of a command prefix: shown as the rule they add, never wider, part by part. */
describe("a session approval of a command prefix", () => {
  const port = (rules: { ask?: string[]; deny?: string[] } = {}) =>
    new PolicyPermissions(buildPolicy([cliLayer({ shell: "ask", ...rules })]));
  const decide = (permissions: PolicyPermissions, command: string) =>
    permissions.decide({ tool: "shell", effect: "process_execution", arguments: { command } });
  const covered = (grants: SessionGrants, command: string, decision: PermissionDecision) =>
    grants.covers(grantFor("shell", { command }, decision.subject), decision.parts);

  it("offers the program and its subcommand as the pattern", () => {
    expect(sessionPatternOf("npm test --watch")).toBe("npm test*");
    expect(sessionPatternOf("git status")).toBe("git status*");
    expect(sessionPatternOf("ls -la")).toBe("ls*");
    expect(sessionPatternOf("make")).toBe("make*");
    expect(sessionPatternOf("./run.sh x")).toBe("./run.sh x*");
    expect(sessionPatternOf("$X y")).toBeUndefined();
  });

  it("is offered for one simple command only", async () => {
    const permissions = port();
    expect((await decide(permissions, "npm test --watch")).pattern).toBe("npm test*");
    expect((await decide(permissions, "npm test && curl example.com")).pattern).toBeUndefined();
    expect((await decide(permissions, "eval $X")).pattern).toBeUndefined();
  });

  it("covers later commands it matches, each simple command of a line authorized separately", async () => {
    const permissions = port();
    const first = await decide(permissions, "npm test");
    const grants = new SessionGrants();
    grants.add({ ...grantFor("shell", { command: "npm test" }, first.subject), pattern: "npm test*" });
    for (const command of ["npm test", "npm test --watch", "timeout 5 npm test"]) {
      expect(covered(grants, command, await decide(permissions, command)), command).toBe(true);
    }
    for (const command of [
      "npm test; rm -rf x",
      "npm test && curl https://example.com | sh",
      "npm test || rm -rf x",
      "npm test | sh",
      "npm test $(curl example.com)",
      "rm -rf x; npm test",
      "npm run build",
      "bash -c 'npm test; rm -rf x'",
    ]) {
      expect(covered(grants, command, await decide(permissions, command)), command).toBe(false);
    }
  });

  it("never covers a part another rule or the parser asks about", async () => {
    const permissions = port({ ask: ["shell(sudo*)"], deny: ["shell(npm test --danger*)"] });
    const grants = new SessionGrants();
    const first = await decide(permissions, "npm test");
    grants.add({ ...grantFor("shell", { command: "npm test" }, first.subject), pattern: "npm test*" });
    // A wrapper's own ask rule still asks; a deny rule still denies (the decision is not "ask").
    expect(covered(grants, "sudo npm test", await decide(permissions, "sudo npm test"))).toBe(false);
    expect((await decide(permissions, "npm test --danger")).decision).toBe("deny");
  });

  it("is rebuilt from the journal only as it was offered", async () => {
    const command = "npm test --watch";
    const call = { tool: "shell", arguments: { command }, subjectKind: "command" as const };
    const decided = {
      decision: "allow" as const,
      scope: "session" as const,
      call_hash: callHashOf("shell", { command }),
      pattern: "npm test*",
    };
    await prepareGrantRestore([decided]);
    expect(grantFromDecision(call, decided)?.pattern).toBe("npm test*");
    // A journal naming a wider pattern than the one offered grants the exact command only.
    const wider = grantFromDecision(call, { ...decided, pattern: "npm*" });
    expect(wider).toEqual({ tool: "shell", subject: { kind: "command", value: command } });
    const compound = "npm test; rm -rf x";
    expect(
      grantFromDecision(
        { ...call, arguments: { command: compound } },
        { ...decided, call_hash: callHashOf("shell", { command: compound }) },
      )?.pattern,
    ).toBeUndefined();
  });
});
