import { posix } from "node:path";
import picomatch from "picomatch";
import { CodedError } from "../shared/coded-error.js";
import { canonicalJson } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";

/** What a rule says about the calls it matches. */
export type RuleDecision = "allow" | "ask" | "deny";
export const RULE_DECISIONS: readonly RuleDecision[] = ["allow", "ask", "deny"];

/**
 * Which argument a rule's pattern is matched against. `path`: a workspace path (glob match);
 * `command`: a shell command line (`*` wildcard match); `none`: patterns never match, only a
 * bare tool rule does.
 */
export type SubjectKind = "path" | "command" | "none";

/** The part of a call that rules, grants and approval prompts talk about. */
export interface Subject {
  kind: SubjectKind;
  /** The path ("." when the tool takes an optional path and none was given), the command, or "" for none. */
  value: string;
}

/** A parsed rule; `pattern` absent means "every call of this tool". */
export interface Rule {
  decision: RuleDecision;
  /** Canonical rule text, e.g. `read_file(src/**)`. */
  text: string;
  /** A tool name, or "*" for every tool. */
  tool: string;
  pattern?: string;
  /** Provenance label, e.g. "cli" or "user config (~/.config/harness/config.json)". */
  source: string;
}

/** A rule text that does not parse. `origin` names where it came from (a file label or "cli"). */
export class RuleSyntaxError extends CodedError<"RULE_INVALID"> {
  override readonly name = "RuleSyntaxError";
  constructor(
    readonly origin: string,
    readonly rule: string,
    readonly problem: string,
  ) {
    super("RULE_INVALID", `${origin}: invalid permission rule ${JSON.stringify(rule)}: ${problem}`);
  }
}

// Tool names as the registry and MCP adapters spell them (e.g. `read_file`, `mcp__github__search`).
const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]*$/;
const MAX_RULE_LENGTH = 1000;

/** Parse `TOOL` or `TOOL(PATTERN)`; throws RuleSyntaxError naming `origin` and the rule. */
export function parseRule(decision: RuleDecision, text: string, origin: string): Rule {
  const fail = (problem: string): never => {
    throw new RuleSyntaxError(origin, text, problem);
  };
  if (text.length > MAX_RULE_LENGTH) fail(`longer than ${MAX_RULE_LENGTH} characters`);
  const trimmed = text.trim();
  if (trimmed === "") fail("empty rule");
  const open = trimmed.indexOf("(");
  if (open === -1) {
    if (trimmed.includes(")")) fail("unbalanced ')'");
    checkToolName(trimmed, fail);
    return { decision, text: trimmed, tool: trimmed, source: origin };
  }
  if (!trimmed.endsWith(")")) fail("a pattern must be closed by ')' at the end of the rule");
  const tool = trimmed.slice(0, open).trim();
  const pattern = trimmed.slice(open + 1, -1);
  checkToolName(tool, fail);
  if (pattern.trim() === "") fail("empty pattern: write the tool name alone to match every call");
  if (pattern !== pattern.trim()) fail("the pattern has leading or trailing spaces");
  if (/[\u0000-\u001f\u007f]/.test(pattern)) fail("the pattern contains control characters");
  return { decision, text: `${tool}(${pattern})`, tool, pattern, source: origin };
}

function checkToolName(name: string, fail: (problem: string) => never): void {
  if (name === "") fail("missing tool name");
  if (name !== "*" && !TOOL_NAME.test(name)) {
    fail("a tool name is letters, digits, '_', '.', ':' or '-' (or '*' for every tool)");
  }
}

/**
 * The subject of a call. `kind` comes from the tool's schema when the caller knows it
 * (see `subjectKindOfSchema`); otherwise it is inferred from the arguments.
 * `override` lets the runtime pass the canonical path (symlinks resolved) it already computed.
 */
export function subjectOf(args: JsonObject, kind?: SubjectKind, override?: string): Subject {
  const effectiveKind = kind ?? inferSubjectKind(args);
  switch (effectiveKind) {
    case "command": {
      const command = override ?? (typeof args.command === "string" ? args.command : "");
      // Leading/trailing blanks do not change what a shell runs; a deny rule must not miss " rm -rf".
      return { kind: "command", value: command.trim() };
    }
    case "path": {
      const raw = override ?? (typeof args.path === "string" ? args.path : ".");
      return { kind: "path", value: normalizeSubjectPath(raw) };
    }
    case "none":
      return { kind: "none", value: "" };
  }
}

function inferSubjectKind(args: JsonObject): SubjectKind {
  if (typeof args.command === "string") return "command";
  if (typeof args.path === "string") return "path";
  return "none";
}

/**
 * Lexical normalization so two spellings of one path meet the same rules (`./.env`, `a//b/`).
 * Paths that escape stay visibly escaping; the workspace boundary rejects them anyway.
 */
export function normalizeSubjectPath(raw: string): string {
  const slashed = raw.replaceAll("\\", "/");
  if (slashed === "") return ".";
  let normalized = posix.normalize(slashed);
  if (normalized.length > 1 && normalized.endsWith("/")) normalized = normalized.slice(0, -1);
  if (normalized.startsWith("./")) normalized = normalized.slice(2);
  return normalized === "" ? "." : normalized;
}

/**
 * A stable text for a subject of kind none: the canonical JSON of the whole arguments, so a
 * session grant for such a tool covers exactly the call the user saw.
 */
export function exactArgumentsSubject(args: JsonObject): string {
  return canonicalJson(args);
}

const pathMatchers = new Map<string, (path: string) => boolean>();

function pathMatcher(pattern: string): (path: string) => boolean {
  let matcher = pathMatchers.get(pattern);
  if (matcher === undefined) {
    const compiled = picomatch(pattern, { dot: true });
    // The workspace root "." is "everything" to `**`-only patterns, which picomatch would miss.
    const everything = /^\*\*(\/\*\*)*$/.test(pattern);
    matcher = (path) => compiled(path) || (path === "." && everything);
    pathMatchers.set(pattern, matcher);
  }
  return matcher;
}

/** `*` matches any run of characters (spaces and slashes included); everything else is literal. */
export function commandPatternMatches(pattern: string, command: string): boolean {
  const parts = pattern.split("*");
  if (parts.length === 1) return pattern === command;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!command.startsWith(first)) return false;
  let position = first.length;
  for (let index = 1; index < parts.length - 1; index += 1) {
    const found = command.indexOf(parts[index]!, position);
    if (found === -1) return false;
    position = found + parts[index]!.length;
  }
  return command.length - last.length >= position && command.endsWith(last);
}

/** Whether a rule covers a call of `tool` with `subject`. */
export function ruleMatches(rule: Rule, tool: string, subject: Subject): boolean {
  if (rule.tool !== "*" && rule.tool !== tool) return false;
  if (rule.pattern === undefined) return true;
  switch (subject.kind) {
    case "path":
      return pathMatcher(rule.pattern)(subject.value);
    case "command":
      return commandPatternMatches(rule.pattern, subject.value);
    case "none":
      return false;
  }
}
