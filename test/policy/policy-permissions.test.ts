import { describe, expect, it } from "vitest";
import { cliLayer } from "../../src/policy/cli-flags.js";
import { buildPolicy } from "../../src/policy/permissions.js";
import { PolicyPermissions } from "../../src/policy/policy-permissions.js";

describe("the policy as the runtime's permission port", () => {
  it("decides through the policy, turning writes into proposals in propose mode", async () => {
    const port = new PolicyPermissions(
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
      subject: { kind: "path", value: "secret/k" },
    });
    expect(port.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(port.describe.write).toEqual({ mode: "propose", source: "cli" });
  });

  it("names the whole call's subject, not the command part that decided", async () => {
    const port = new PolicyPermissions(buildPolicy([cliLayer({ shell: "ask" })]));
    const decision = await port.decide({
      tool: "shell",
      effect: "process_execution",
      arguments: { command: " npm test && npm run lint " },
    });
    expect(decision).toMatchObject({
      decision: "ask",
      subject: { kind: "command", value: "npm test && npm run lint" },
    });
  });

  it("resolves a path subject to rule on where it leads, unless the caller says it is canonical", async () => {
    const resolved: string[] = [];
    const port = new PolicyPermissions(
      buildPolicy([cliLayer({ deny: ["read_file(secret/**)"] })]),
      (tool) => (tool === "read_file" ? "path" : undefined),
      async (path) => {
        resolved.push(path);
        return path === "link.txt" ? "secret/key.txt" : path;
      },
    );
    const read = (path: string, canonical: boolean) =>
      port.decide({
        tool: "read_file",
        effect: "read_only",
        arguments: { path },
        ...(canonical ? { canonicalSubject: true as const } : {}),
      });
    expect((await read("link.txt", false)).decision).toBe("deny");
    expect((await read("secret/key.txt", true)).decision).toBe("deny");
    expect((await read("link.txt", true)).decision).toBe("allow");
    expect(resolved).toEqual(["link.txt"]);
  });
});
