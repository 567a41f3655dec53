import picomatch from "picomatch";
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

describe("path rules decided at the size of a tree", () => {
  const rule = (text: string) => parseRule("ask", text, "cli");
  // Patterns with a literal run (the fast refusal applies) and with other glob syntax (it does not).
  const PATTERNS = [
    "**/.env",
    "**/.env.local",
    "**/.env.*.local",
    "**/*.pem",
    "**/id_rsa",
    "secret/**",
    "src/**/x.ts",
    "a/b",
    "*.ts",
    "docs/",
    "**/v[0-9].txt",
    "**/{a,b}.md",
    "./lib/**",
    "**",
  ];
  const NAMES = [
    ".env",
    ".env.local",
    ".env.prod.local",
    "key.pem",
    "id_rsa",
    "x.ts",
    "a",
    "b",
    "v1.txt",
    "a.md",
  ];
  const DIRS = ["", "secret/", "src/", "src/deep/", "a/", "docs/", "lib/", ".hidden/", "x.env/", "id_rsa/"];
  const PATHS = [
    ...DIRS.flatMap((dir) => NAMES.map((name) => `${dir}${name}`)),
    "docs",
    "lib",
    "a/b",
    ".",
    "secret",
  ];

  it("decides every path as picomatch itself does", () => {
    for (const pattern of PATTERNS) {
      const compiled = picomatch(pattern, { dot: true });
      const everything = /^\*\*(\/\*\*)*$/.test(pattern);
      for (const path of PATHS) {
        const expected = compiled(path) || (path === "." && everything);
        const got = ruleMatches(rule(`read_file(${pattern})`), "read_file", { kind: "path", value: path });
        expect({ pattern, path, got }).toEqual({ pattern, path, got: expected });
      }
    }
  });
});
