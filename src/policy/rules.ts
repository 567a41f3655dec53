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
  if (!NOT_PLAIN.test(raw)) return raw;
  const slashed = raw.replaceAll("\\", "/");
  if (slashed === "") return ".";
  let normalized = posix.normalize(slashed);
  if (normalized.length > 1 && normalized.endsWith("/")) normalized = normalized.slice(0, -1);
  if (normalized.startsWith("./")) normalized = normalized.slice(2);
  return normalized === "" ? "." : normalized;
}

/**
 * What `posix.normalize` and the rest of `normalizeSubjectPath` could change: empty, a
 * backslash, an empty, `.` or `..` segment (a leading, doubled or trailing slash among them).
 */
const NOT_PLAIN = /^$|\\|\/\/|^\/|\/$|(^|\/)\.{1,2}(\/|$)/;

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
