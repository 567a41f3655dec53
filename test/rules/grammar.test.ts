import { describe, expect, it } from "vitest";
import { parseRule, RuleSyntaxError } from "../../src/rules/grammar.js";

describe("parseRule", () => {
  it.each([
    ["read_file(src/**)", "read_file", "src/**"],
    ["edit_file(**/*.ts)", "edit_file", "**/*.ts"],
    ["read_file(.env)", "read_file", ".env"],
    ["grep", "grep", undefined],
    ["*", "*", undefined],
    ["shell(npm test*)", "shell", "npm test*"],
    ["shell(echo (hi))", "shell", "echo (hi)"],
    ["mcp__github__search", "mcp__github__search", undefined],
    ["mcp__github__*", "mcp__github__*", undefined],
    ["mcp__*__read*(x)", "mcp__*__read*", "x"],
  ])("parses %s", (text, tool, pattern) => {
    const rule = parseRule("allow", text, "cli");
    expect(rule.tool).toBe(tool);
    expect(rule.pattern).toBe(pattern);
    expect(rule.source).toBe("cli");
    expect(rule.decision).toBe("allow");
  });

  it.each([
    ["", "empty rule"],
    ["   ", "empty rule"],
    ["read_file(", "closed by ')'"],
    ["read_file)", "unbalanced"],
    ["read_file()", "empty pattern"],
    ["(src/**)", "missing tool name"],
    ["read file", "tool name"],
    ["mcp__git hub__*", "'*' matches any run"],
    ["read_file( src)", "leading or trailing spaces"],
    ["shell(rm\u0007)", "control characters"],
  ])("rejects %j naming the origin and the rule", (text, problem) => {
    let caught: unknown;
    try {
      parseRule("deny", text, "user config (~/.config/harness/config.json)");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RuleSyntaxError);
    const error = caught as RuleSyntaxError;
    expect(error.origin).toBe("user config (~/.config/harness/config.json)");
    expect(error.rule).toBe(text);
    expect(error.message).toContain("user config (~/.config/harness/config.json)");
    expect(error.message).toContain(JSON.stringify(text));
    expect(error.problem).toContain(problem);
  });
});
