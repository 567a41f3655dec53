import { posix } from "node:path";
import picomatch from "picomatch";
import type { Rule } from "../rules/grammar.js";
import type { Subject, SubjectKind } from "../runtime/ports.js";
import type { JsonObject } from "../shared/json.js";

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
  // Most paths (grep decides one per file of the tree) are already normal: returned as they are.
  if (isPlainPath(raw)) return raw;
  const slashed = raw.replaceAll("\\", "/");
  if (slashed === "") return ".";
  let normalized = posix.normalize(slashed);
  if (normalized.length > 1 && normalized.endsWith("/")) normalized = normalized.slice(0, -1);
  if (normalized.startsWith("./")) normalized = normalized.slice(2);
  return normalized === "" ? "." : normalized;
}

/**
 * Nothing `posix.normalize` and the rest of `normalizeSubjectPath` could change: not empty, no
 * backslash, no empty, `.` or `..` segment (a leading, doubled or trailing slash among them).
 * Native string searches rather than one regular expression: grep asks this for every file of
 * a tree, and the expression's alternatives scanned each path several times.
 */
function isPlainPath(raw: string): boolean {
  if (raw === "" || raw.startsWith("/") || raw.endsWith("/") || raw.includes("\\") || raw.includes("//"))
    return false;
  // A `.` or `..` segment starts with a dot: most paths have none (an extension's dot is inside).
  if (!raw.startsWith(".") && !raw.includes("/.")) return true;
  return !(
    raw === "." ||
    raw === ".." ||
    raw.startsWith("./") ||
    raw.startsWith("../") ||
    raw.endsWith("/.") ||
    raw.endsWith("/..") ||
    raw.includes("/./") ||
    raw.includes("/../")
  );
}

const pathMatchers = new Map<string, (path: string) => boolean>();

function pathMatcher(pattern: string): (path: string) => boolean {
  let matcher = pathMatchers.get(pattern);
  if (matcher === undefined) {
    const compiled = picomatch(pattern, { dot: true });
    // The workspace root "." is "everything" to `**`-only patterns, which picomatch would miss.
    const everything = /^\*\*(\/\*\*)*$/.test(pattern);
    const needle = requiredText(pattern);
    matcher =
      needle === undefined
        ? (path) => compiled(path) || (path === "." && everything)
        : (path) => (path.includes(needle) && compiled(path)) || (path === "." && everything);
    pathMatchers.set(pattern, matcher);
  }
  return matcher;
}

/**
 * Text every path the pattern matches contains: its longest run of literal characters. A path
 * without it is refused without running the pattern's expression (grep asks the built-in rules
 * about every file of a tree, and `**` expressions are slow). Only for patterns made of plain
 * characters, `*` and `/`, whose literal runs picomatch matches as written; a pattern with any
 * other glob syntax, or a `.`/`..` segment picomatch might rewrite, has none.
 */
function requiredText(pattern: string): string | undefined {
  if (!/^[A-Za-z0-9_.,~%=:#\-/* ]+$/.test(pattern)) return undefined;
  const segments = pattern.split("/");
  if (segments.some((segment) => segment === "." || segment === "..")) return undefined;
  let longest = "";
  for (const run of pattern.split(/[*/]/)) if (run.length > longest.length) longest = run;
  return longest === "" ? undefined : longest;
}

/** A pattern's literal parts, split once (rules are few; subjects, e.g. grep's files, many). */
const patternParts = new Map<string, string[]>();

/** `*` matches any run of characters (spaces and slashes included); everything else is literal. */
export function commandPatternMatches(pattern: string, command: string): boolean {
  let parts = patternParts.get(pattern);
  if (parts === undefined) {
    parts = pattern.split("*");
    // Bounded: session grants add patterns too, one per approval.
    if (patternParts.size >= 1024) patternParts.clear();
    patternParts.set(pattern, parts);
  }
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

/** Whether a rule's tool name (`*` for any run of characters, e.g. `mcp__github__*`) names `tool`. */
export function toolMatches(ruleTool: string, tool: string): boolean {
  // Every built-in rule on secret files names any tool: asked about each file grep lists.
  if (ruleTool === "*") return true;
  return ruleTool.includes("*") ? commandPatternMatches(ruleTool, tool) : ruleTool === tool;
}

/** Whether a rule covers a call of `tool` with `subject`. */
export function ruleMatches(rule: Rule, tool: string, subject: Subject): boolean {
  if (!toolMatches(rule.tool, tool)) return false;
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
