import { describe, expect, it } from "vitest";
import {
  commandPatternMatches,
  normalizeSubjectPath,
  ruleMatches,
  subjectOf,
} from "../../src/policy/rules.js";
import { parseRule } from "../../src/rules/grammar.js";

describe("matching", () => {
  const rule = (text: string) => parseRule("allow", text, "cli");

  it("matches paths with picomatch, dotfiles included", () => {
    const subject = subjectOf({ path: "src/deep/a.ts" });
    expect(ruleMatches(rule("read_file(src/**)"), "read_file", subject)).toBe(true);
    expect(ruleMatches(rule("read_file(**/*.ts)"), "read_file", subject)).toBe(true);
    expect(ruleMatches(rule("read_file(lib/**)"), "read_file", subject)).toBe(false);
    expect(ruleMatches(rule("read_file(src/**)"), "edit_file", subject)).toBe(false);
    expect(ruleMatches(rule("read_file(**/.env)"), "read_file", subjectOf({ path: "a/.env" }))).toBe(true);
  });

  it("matches tool names with * as any run of characters, exactly otherwise", () => {
    const none = subjectOf({});
    expect(ruleMatches(rule("mcp__github__*"), "mcp__github__search_issues", none)).toBe(true);
    expect(ruleMatches(rule("mcp__github__*"), "mcp__gitlab__search", none)).toBe(false);
    expect(ruleMatches(rule("mcp__github__*"), "mcp__github_enterprise__search", none)).toBe(false);
    expect(ruleMatches(rule("mcp__*__read*"), "mcp__fs__read_text_file", none)).toBe(true);
    expect(ruleMatches(rule("mcp__*__read*"), "mcp__fs__write_file", none)).toBe(false);
    expect(ruleMatches(rule("*"), "anything", none)).toBe(true);
    expect(ruleMatches(rule("mcp__github__search"), "mcp__github__search_issues", none)).toBe(false);
  });

  it("normalizes spellings of one path before matching", () => {
    expect(normalizeSubjectPath("./.env")).toBe(".env");
    expect(normalizeSubjectPath("src//a/../b.ts")).toBe("src/b.ts");
    expect(normalizeSubjectPath("src/")).toBe("src");
    expect(normalizeSubjectPath("")).toBe(".");
    expect(ruleMatches(rule("read_file(.env)"), "read_file", subjectOf({ path: "./.env" }))).toBe(true);
  });

  it("gives a path tool without a path the subject '.'", () => {
    const subject = subjectOf({ pattern: "TODO" }, "path");
    expect(subject).toEqual({ kind: "path", value: "." });
    expect(ruleMatches(rule("grep(**)"), "grep", subject)).toBe(true);
    expect(ruleMatches(rule("grep(src/**)"), "grep", subject)).toBe(false);
    expect(ruleMatches(rule("grep"), "grep", subject)).toBe(true);
  });

  it("matches commands with * spanning spaces and slashes, exact otherwise", () => {
    expect(commandPatternMatches("npm test*", "npm test -- --run a/b")).toBe(true);
    expect(commandPatternMatches("npm test*", "npm test")).toBe(true);
    expect(commandPatternMatches("npm test", "npm test --watch")).toBe(false);
    expect(commandPatternMatches("npm test", "npm test")).toBe(true);
    expect(commandPatternMatches("git * --force", "git push origin main --force")).toBe(true);
    expect(commandPatternMatches("a*a", "a")).toBe(false);
    expect(commandPatternMatches("*", "")).toBe(true);
    const deny = parseRule("deny", "shell(rm -rf*)", "cli");
    expect(ruleMatches(deny, "shell", subjectOf({ command: "  rm -rf /" }))).toBe(true);
  });

  it("lets only bare rules match tools without a subject", () => {
    const subject = subjectOf({ url: "https://example.com" }, "none");
    expect(ruleMatches(rule("web_fetch"), "web_fetch", subject)).toBe(true);
    expect(ruleMatches(rule("web_fetch(https://*)"), "web_fetch", subject)).toBe(false);
    expect(ruleMatches(rule("*"), "web_fetch", subject)).toBe(true);
  });
});

describe("subjectKindOf", () => {
  it("reads the subject from the tool's schema", async () => {
    const { z } = await import("zod");
    const { subjectKindOf } = await import("../../src/policy/subject-kind.js");
    expect(
      subjectKindOf({ input: z.strictObject({ command: z.string() }), effect: "process_execution" }),
    ).toBe("command");
    expect(
      subjectKindOf({
        input: z.strictObject({ pattern: z.string(), path: z.string().optional() }),
        effect: "read_only",
      }),
    ).toBe("path");
    expect(subjectKindOf({ input: z.strictObject({ url: z.string() }), effect: "network_read" })).toBe(
      "none",
    );
  });
});
