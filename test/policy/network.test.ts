import { describe, expect, it } from "vitest";
import { evaluateNetwork, formatNetExplanation } from "../../src/policy/network.js";
import { parseRule, type Rule, type RuleDecision, RuleSyntaxError } from "../../src/rules/grammar.js";
import { netPatternMatches, parseNetPattern } from "../../src/rules/net-pattern.js";

const rules = (...specs: [RuleDecision, string][]): { rules: Rule[] } => ({
  rules: specs.map(([decision, text]) => parseRule(decision, text, "cli")),
});

describe("net(HOST[:PORT]) patterns", () => {
  const table: [pattern: string, host: string, port: number, matches: boolean][] = [
    ["registry.npmjs.org:443", "registry.npmjs.org", 443, true],
    ["registry.npmjs.org:443", "registry.npmjs.org", 80, false],
    ["registry.npmjs.org", "registry.npmjs.org", 8443, true],
    ["Registry.NPMJS.org.", "registry.npmjs.org", 443, true],
    ["registry.npmjs.org", "evil-registry.npmjs.org", 443, false],
    ["*.pythonhosted.org", "files.pythonhosted.org", 443, true],
    ["*.pythonhosted.org", "a.b.pythonhosted.org", 443, true],
    ["*.pythonhosted.org", "pythonhosted.org", 443, false],
    ["*.pythonhosted.org", "files.pythonhosted.org.evil.com", 443, false],
    ["*.pythonhosted.org", "evilpythonhosted.org", 443, false],
    ["*.pythonhosted.org:443", "files.pythonhosted.org", 80, false],
    ["*:443", "anything.example", 443, true],
    ["*:443", "127.0.0.1", 443, false],
    ["api.*.example.com", "api.eu.example.com", 443, true],
    ["api.*.example.com", "api.example.com", 443, false],
    ["127.0.0.1:8080", "127.0.0.1", 8080, true],
    ["[::1]:8080", "::1", 8080, true],
    ["[::1]", "::1", 1, true],
  ];
  for (const [pattern, host, port, matches] of table) {
    it(`${pattern} ${matches ? "covers" : "does not cover"} ${host}:${port}`, () => {
      const parsed = parseNetPattern(pattern);
      if (typeof parsed === "string") throw new Error(parsed);
      expect(netPatternMatches(parsed, { host, port })).toBe(matches);
    });
  }

  it("refuses patterns that are not hosts, with a reason naming the rule", () => {
    for (const bad of [
      "net(exa mple.com)",
      "net(host:99999)",
      "net(::1)",
      "net([::1)",
      "net(*.com:http)",
      "net(a..b)",
      "net(-a.com)",
    ]) {
      expect(() => parseRule("allow", bad, "user config")).toThrow(RuleSyntaxError);
    }
    expect(parseRule("allow", "net(Registry.NPMJS.org:443)", "cli").text).toBe("net(registry.npmjs.org:443)");
  });
});

describe("deciding a connection", () => {
  it("denies with no matching rule, saying which rule would allow it", () => {
    const evaluation = evaluateNetwork(rules(["allow", "net(example.org)"]), "registry.npmjs.org", 443);
    expect(evaluation).toMatchObject({
      decision: "deny",
      source: "default",
      reason: "no rule allows registry.npmjs.org:443: add --allow 'net(registry.npmjs.org:443)'",
    });
  });

  it("deny > ask > allow across sources, with the deciding rule and its source", () => {
    const policy = {
      rules: [
        parseRule("allow", "net(*.example.org)", "user config"),
        parseRule("ask", "net(api.example.org)", "project config"),
        parseRule("deny", "net(api.example.org:22)", "cli"),
      ],
    };
    expect(evaluateNetwork(policy, "www.example.org", 443)).toMatchObject({
      decision: "allow",
      rule: "net(*.example.org)",
      source: "user config",
      exact: false,
    });
    expect(evaluateNetwork(policy, "API.example.org", 443)).toMatchObject({
      decision: "ask",
      rule: "net(api.example.org)",
      exact: true,
    });
    expect(evaluateNetwork(policy, "api.example.org", 22)).toMatchObject({ decision: "deny", source: "cli" });
  });

  it("marks as exact only a rule that names the host itself", () => {
    const policy = rules(
      ["allow", "net(*.example.org)"],
      ["allow", "net(db.example.org:5432)"],
      ["allow", "net"],
    );
    expect(evaluateNetwork(policy, "db.example.org", 5432).exact).toBe(true);
    expect(evaluateNetwork(policy, "db.example.org", 443).exact).toBe(false);
    expect(evaluateNetwork(policy, "other.test", 443)).toMatchObject({
      decision: "allow",
      rule: "net",
      exact: false,
    });
  });

  it("allow * and allow *(...) do not open the network; a bare deny * or ask * still narrows it", () => {
    expect(
      evaluateNetwork(rules(["allow", "*"], ["allow", "*(**)"], ["allow", "n*"]), "example.org", 443)
        .decision,
    ).toBe("deny");
    const denyAll = rules(["allow", "net(example.org)"], ["deny", "*"]);
    expect(evaluateNetwork(denyAll, "example.org", 443)).toMatchObject({ decision: "deny", rule: "*" });
    const askAll = rules(["allow", "net(example.org)"], ["ask", "*"]);
    expect(evaluateNetwork(askAll, "example.org", 443).decision).toBe("ask");
    // A wildcard rule with a pattern is about paths and commands: the built-in asks never reach a host.
    const patterned = rules(["allow", "net(example.org)"], ["deny", "*(**/.env)"], ["deny", "shell(curl*)"]);
    expect(evaluateNetwork(patterned, "example.org", 443).decision).toBe("allow");
  });

  it("explains in words, with the rule, the source and what it means for private addresses", () => {
    const text = formatNetExplanation(
      evaluateNetwork(rules(["allow", "net(127.0.0.1:8080)"]), "127.0.0.1", 8080),
    );
    expect(text).toBe(
      [
        "net 127.0.0.1:8080: allow",
        "  because: allow rule net(127.0.0.1:8080) from cli",
        "  rule:    net(127.0.0.1:8080)",
        "  source:  cli",
        "  private: the rule names this host exactly, so it may reach a loopback, private or link-local address",
      ].join("\n"),
    );
    expect(formatNetExplanation(evaluateNetwork(rules(), "a.test", 80))).toContain(
      "because: no rule allows a.test:80: add --allow 'net(a.test:80)'",
    );
  });
});
