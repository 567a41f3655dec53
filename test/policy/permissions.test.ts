import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { cliLayer } from "../../src/policy/cli-flags.js";
import { evaluate } from "../../src/policy/evaluation.js";
import { explain, formatExplanation } from "../../src/policy/explain.js";
import { buildPolicy, type PermissionLayer } from "../../src/policy/permissions.js";
import { loadShellParser } from "../../src/policy/shell-command.js";
import type { EffectClass } from "../../src/tools/tool.js";

beforeAll(loadShellParser);

const USER = "user config (~/.config/harness/config.json)";
const PROJECT = "project config (harness.config.json)";

function user(rules: Partial<PermissionLayer>): PermissionLayer {
  return { source: USER, trusted: true, ...rules };
}
function project(rules: Partial<PermissionLayer>, trusted = false): PermissionLayer {
  return { source: PROJECT, trusted, ...rules };
}

describe("precedence", () => {
  it("lets a deny win over an allow regardless of order or source", () => {
    const layersA = [
      user({ allow: ["read_file(src/**)"] }),
      cliLayer({ deny: ["read_file(src/secret/**)"] }),
    ];
    const layersB = [
      user({ deny: ["read_file(src/secret/**)"] }),
      cliLayer({ allow: ["read_file(src/**)"] }),
    ];
    for (const layers of [layersA, layersB, [...layersA].reverse()]) {
      const policy = buildPolicy(layers);
      expect(
        evaluate(policy, { tool: "read_file", effect: "read_only", args: { path: "src/secret/k" } }).decision,
      ).toBe("deny");
      expect(
        evaluate(policy, { tool: "read_file", effect: "read_only", args: { path: "src/a.ts" } }).decision,
      ).toBe("allow");
    }
  });

  it("lets ask win over allow", () => {
    const policy = buildPolicy([user({ allow: ["edit_file"], ask: ["edit_file(**/*.ts)"] })]);
    expect(
      evaluate(policy, { tool: "edit_file", effect: "local_write", args: { path: "a.ts" } }).decision,
    ).toBe("ask");
    expect(
      evaluate(policy, { tool: "edit_file", effect: "local_write", args: { path: "a.md" } }).decision,
    ).toBe("allow");
  });

  it("lets a CLI deny beat a user allow and names the CLI as the source", () => {
    const policy = buildPolicy([user({ allow: ["shell(npm test*)"] }), cliLayer({ deny: ["shell"] })]);
    const result = evaluate(policy, {
      tool: "shell",
      effect: "process_execution",
      args: { command: "npm test" },
    });
    expect(result).toMatchObject({ decision: "deny", rule: "shell", source: "cli" });
  });

  it("lets a configured rule override a built-in ask (built-ins are only a fallback)", () => {
    const builtIn = buildPolicy([]);
    expect(
      evaluate(builtIn, { tool: "read_file", effect: "read_only", args: { path: ".env" } }),
    ).toMatchObject({
      decision: "ask",
      source: "default",
    });
    const overridden = buildPolicy([user({ allow: ["read_file(.env)"] })]);
    expect(
      evaluate(overridden, { tool: "read_file", effect: "read_only", args: { path: ".env" } }),
    ).toMatchObject({
      decision: "allow",
      source: USER,
    });
  });
});

describe("defaults per effect class", () => {
  const call = (effect: EffectClass, layers: PermissionLayer[] = []) =>
    evaluate(buildPolicy(layers), { tool: "t", effect, args: {} }).decision;

  it("allows pure and read-only, asks for network and side effects", () => {
    expect(call("pure")).toBe("allow");
    expect(call("read_only")).toBe("allow");
    for (const effect of ["network_read", "network_write", "external_side_effect", "destructive"] as const) {
      expect(call(effect)).toBe("ask");
    }
  });

  it("allows web_fetch by a built-in rule (its hops are decided by net() rules), read-only runs too; a user's rule wins", () => {
    const fetch = (layers: PermissionLayer[] = []) =>
      evaluate(buildPolicy(layers), {
        tool: "web_fetch",
        effect: "network_read",
        args: { url: "https://a.example/" },
      });
    expect(fetch()).toMatchObject({ decision: "allow", rule: "web_fetch", source: "default" });
    expect(fetch([cliLayer({ readOnly: true })]).decision).toBe("allow");
    expect(fetch([user({ ask: ["web_fetch"] })]).decision).toBe("ask");
    expect(fetch([user({ deny: ["web_fetch"] })]).decision).toBe("deny");
  });

  it("follows the write mode for local writes and --read-only forces deny", () => {
    expect(call("local_write")).toBe("allow");
    for (const mode of ["allow", "ask", "deny", "propose"] as const) {
      expect(call("local_write", [cliLayer({ write: mode })])).toBe(mode);
    }
    expect(call("local_write", [cliLayer({ write: "allow", readOnly: true })])).toBe("deny");
    // Read-only also beats an explicit allow rule for writes, and reads stay allowed.
    const readOnly = buildPolicy([user({ allow: ["edit_file"] }), cliLayer({ readOnly: true })]);
    expect(
      evaluate(readOnly, { tool: "edit_file", effect: "local_write", args: { path: "a" } }),
    ).toMatchObject({
      decision: "deny",
      source: "cli",
    });
    expect(evaluate(readOnly, { tool: "read_file", effect: "read_only", args: { path: "a" } }).decision).toBe(
      "allow",
    );
  });

  it("follows the shell mode for process execution, default ask", () => {
    expect(call("process_execution")).toBe("ask");
    expect(call("process_execution", [cliLayer({ shell: "allow" })])).toBe("allow");
    expect(call("process_execution", [cliLayer({ shell: "deny" })])).toBe("deny");
  });
});

describe("project config trust", () => {
  it("ignores an untrusted project's allow rules and reports them, but honours its deny and ask", () => {
    const policy = buildPolicy([
      project({ allow: ["shell"], deny: ["read_file(secrets/**)"], ask: ["edit_file(package.json)"] }),
    ]);
    const shell = evaluate(policy, {
      tool: "shell",
      effect: "process_execution",
      args: { command: "curl x | sh" },
    });
    expect(shell.decision).toBe("ask");
    expect(shell.ignored).toEqual([
      { setting: "shell", decision: "allow", source: PROJECT, reason: expect.stringContaining("trusted") },
    ]);
    expect(policy.ignored.map((entry) => entry.setting)).toEqual(["shell"]);
    expect(
      evaluate(policy, { tool: "read_file", effect: "read_only", args: { path: "secrets/a" } }),
    ).toMatchObject({
      decision: "deny",
      source: PROJECT,
    });
    expect(
      evaluate(policy, { tool: "edit_file", effect: "local_write", args: { path: "package.json" } }).decision,
    ).toBe("ask");
  });

  it("honours a trusted project's allow rules", () => {
    const policy = buildPolicy([project({ allow: ["shell(npm test)"] }, true)]);
    expect(
      evaluate(policy, { tool: "shell", effect: "process_execution", args: { command: "npm test" } }),
    ).toMatchObject({ decision: "allow", source: PROJECT });
  });

  it("lets an untrusted project only tighten modes", () => {
    const loosen = buildPolicy([
      user({ write: "ask" }),
      project({ write: "allow", shell: "allow", readOnly: false }),
    ]);
    expect(loosen.write).toEqual({ value: "ask", source: USER });
    expect(loosen.shell.value).toBe("ask");
    expect(loosen.ignored.map((entry) => entry.setting)).toEqual(["write=allow", "shell=allow"]);
    const tighten = buildPolicy([project({ write: "deny", shell: "deny" })]);
    expect(tighten.write).toEqual({ value: "deny", source: PROJECT });
    expect(tighten.shell).toEqual({ value: "deny", source: PROJECT });
  });
});

describe("explain", () => {
  it("names the deciding rule and the file it came from", async () => {
    const policy = buildPolicy([user({ deny: ["read_file(.env)"] }), cliLayer({ allow: ["read_file"] })]);
    const explanation = await explain(policy, "read_file", "read_only", { path: ".env" });
    expect(explanation).toMatchObject({ decision: "deny", rule: "read_file(.env)", source: USER });
    expect(explanation.reason).toContain("read_file(.env)");
    const text = formatExplanation("read_file", explanation);
    expect(text).toContain("~/.config/harness/config.json");
    expect(text).toContain("read_file(.env)");
  });

  it("explains a fallback by its mode and source", async () => {
    const policy = buildPolicy([cliLayer({ write: "propose" })]);
    expect(await explain(policy, "edit_file", "local_write", { path: "a.ts" })).toMatchObject({
      decision: "propose",
      source: "cli",
      reason: expect.stringContaining("write mode is propose"),
    });
    expect(await explain(policy, "grep", "read_only", {}, "path")).toMatchObject({
      decision: "allow",
      source: "default",
    });
  });
});

describe("digest and describe", () => {
  const rules = ["read_file(src/**)", "grep", "edit_file(**/*.ts)", "shell(npm test*)"];

  it("does not change when rules are reordered, and changes when one changes", () => {
    fc.assert(
      fc.property(fc.shuffledSubarray(rules, { minLength: rules.length }), (shuffled) => {
        const a = buildPolicy([user({ allow: rules })]);
        const b = buildPolicy([user({ allow: shuffled })]);
        expect(b.digest).toBe(a.digest);
      }),
    );
    const base = buildPolicy([user({ allow: rules })]).digest;
    expect(buildPolicy([user({ allow: [...rules.slice(1), "read_file(lib/**)"] })]).digest).not.toBe(base);
    expect(buildPolicy([user({ allow: rules, deny: ["grep"] })]).digest).not.toBe(base);
    expect(buildPolicy([user({ allow: rules }), cliLayer({ shell: "deny" })]).digest).not.toBe(base);
    expect(base).toMatch(/^[0-9a-f]{64}$/);
  });

  it("describes rules with their sources as JSON", () => {
    const policy = buildPolicy([
      user({ allow: ["grep"] }),
      project({ allow: ["shell"] }),
      cliLayer({ deny: ["*"] }),
    ]);
    const described = policy.describe();
    expect(described.rules).toEqual([
      { decision: "allow", rule: "grep", source: USER },
      { decision: "deny", rule: "*", source: "cli" },
    ]);
    expect(described.ignored).toEqual([
      { setting: "shell", decision: "allow", source: PROJECT, reason: expect.any(String) },
    ]);
    expect(JSON.parse(JSON.stringify(described))).toEqual(described);
  });

  it("rejects a CLI rule that does not parse, naming the CLI", () => {
    expect(() => buildPolicy([cliLayer({ deny: ["shell("] })])).toThrow(
      /^cli: invalid permission rule "shell\("/,
    );
  });
});
