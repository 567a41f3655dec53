import type { Rule, RuleDecision } from "../rules/grammar.js";
import type { PermissionVerdict, Subject, SubjectKind } from "../runtime/ports.js";
import type { JsonObject } from "../shared/json.js";
import type { EffectClass } from "../tools/tool.js";
import { pathArguments } from "./argument-paths.js";
import { DEFAULT_SOURCE, defaultDecision, type EffectiveModes } from "./defaults.js";
import { type IgnoredSetting, matchingIgnored, type Policy } from "./permissions.js";
import { normalizeSubjectPath, ruleMatches, subjectOf, toolMatches } from "./rules.js";
import { type CommandPart, splitCommand } from "./shell-command.js";

/*
 * Deciding one call under a built policy (permissions.ts builds it from the layers): rules, the
 * read-only mode, the built-in rules and the per-effect defaults, per path name and per simple
 * command.
 */

/** A call as permission evaluation sees it. */
export interface PermissionQuery {
  tool: string;
  effect: EffectClass;
  args: JsonObject;
  /** From the tool's schema (`subjectKindOf`); inferred from `args` when absent. */
  subjectKind?: SubjectKind;
  /** The canonical subject when the runtime already resolved it (e.g. a symlink-free path). */
  subject?: string;
  /**
   * Other names of what a path subject touches: the workspace-relative target its symlinks
   * resolve to. Every name is evaluated; the strictest decision wins.
   */
  aliases?: readonly string[];
}

/** How one simple command of a shell command line was decided. */
export interface PartEvaluation {
  /** The simple command as rules match it (normalized, wrappers removed). */
  command: string;
  decision: PermissionVerdict;
  rule?: string;
  source: string;
  reason: string;
  /** Whether a session approval of a command pattern may allow it (see `DecidedPart`). */
  grantable: boolean;
}

export interface Evaluation {
  decision: PermissionVerdict;
  /** The deciding rule's text, when a rule decided. */
  rule?: string;
  /** Provenance of whatever decided: a rule's source, a mode's source, or "default". */
  source: string;
  reason: string;
  subject: Subject;
  /** Ignored settings that would have matched this call. */
  ignored?: IgnoredSetting[];
  /** For a path: the other name (a symlink's target) whose decision this is. */
  resolved?: string;
  /** For a shell command: every simple command and its decision, in the order they appear. */
  parts?: PartEvaluation[];
}

/**
 * What a read-only run denies whatever the rules say: every effect that changes something, here
 * or elsewhere (an MCP tool from an untrusted server is an external side effect). Commands are
 * governed by the read-only sandbox instead.
 */
const WRITE_EFFECTS: ReadonlySet<EffectClass> = new Set([
  "local_write",
  "destructive",
  "network_write",
  "external_side_effect",
]);

/**
 * Decide a call. Order-independent: any matching deny wins, then ask, then allow, across all
 * configured sources; built-in rules and then per-effect defaults apply only when none matched.
 * A path is decided under each of its names (the path given and what its symlinks resolve to);
 * a shell command line is decided per simple command (see shell-command.ts). The strictest
 * decision wins. Deciding a shell command needs `loadShellParser()` to have resolved.
 */
export function evaluate(policy: Policy, query: PermissionQuery): Evaluation {
  const subject = subjectOf(query.args, query.subjectKind, query.subject);
  const ignored = matchingIgnored(policy, query.tool, subject);
  const evaluation =
    subject.kind === "command"
      ? evaluateCommand(policy, query, subject)
      : evaluatePath(policy, query, subject);
  return ignored.length > 0 ? { ...evaluation, ignored } : evaluation;
}

function evaluatePath(policy: Policy, query: PermissionQuery, subject: Subject): Evaluation {
  let strictest = evaluateSubject(policy, query.tool, query.effect, subject);
  if (subject.kind !== "path") return strictest;
  for (const raw of query.aliases ?? []) {
    const alias = normalizeSubjectPath(raw);
    if (alias === subject.value) continue;
    const other = evaluateSubject(policy, query.tool, query.effect, { kind: "path", value: alias });
    if (severity(other.decision) > severity(strictest.decision)) {
      strictest = {
        ...other,
        subject,
        resolved: alias,
        reason: `${subject.value} is ${alias} (a symbolic link): ${other.reason}`,
      };
    }
  }
  return strictest;
}

const PARSER_SOURCE = "shell command analysis";

function evaluateCommand(policy: Policy, query: PermissionQuery, subject: Subject): Evaluation {
  const parts = splitCommand(subject.value).parts.map((part) => evaluatePart(policy, query, part));
  // A deny rule written for the whole line as typed still denies it.
  const whole = strongestMatch(policy.rules, query.tool, subject);
  if (whole?.decision === "deny") {
    return { ...fromRule(whole, subject), parts };
  }
  let deciding = parts[0] as PartEvaluation;
  for (const part of parts) if (severity(part.decision) > severity(deciding.decision)) deciding = part;
  const evaluation: Evaluation = {
    decision: deciding.decision,
    source: deciding.source,
    reason: parts.length > 1 ? `${deciding.command}: ${deciding.reason}` : deciding.reason,
    subject,
    parts,
  };
  if (deciding.rule !== undefined) evaluation.rule = deciding.rule;
  return evaluation;
}

function evaluatePart(policy: Policy, query: PermissionQuery, part: CommandPart): PartEvaluation {
  const subject: Subject = { kind: "command", value: part.text };
  const own = evaluateSubject(policy, query.tool, query.effect, subject);
  const evaluation = restrictPart(policy, query, part, own);
  const result: PartEvaluation = {
    command: part.text,
    decision: evaluation.decision,
    source: evaluation.source,
    reason: evaluation.reason,
    // A session's pattern grant acts as an allow of this part's own text: would the part still
    // ask (or be denied) if that allowed it? Then no grant covers it.
    grantable:
      own.decision === "ask" &&
      evaluation.decision === "ask" &&
      restrictPart(policy, query, part, { ...own, decision: "allow" }).decision === "allow",
  };
  if (evaluation.rule !== undefined) result.rule = evaluation.rule;
  return result;
}

/**
 * What rules on other names of a part (its bare program name, the wrappers seen through) and the
 * parser's doubts make of the decision on its own text: only ever stricter.
 */
function restrictPart(
  policy: Policy,
  query: PermissionQuery,
  part: CommandPart,
  decided: Evaluation,
): Evaluation {
  const subject = decided.subject;
  let evaluation = decided;
  // `/usr/bin/git push` is `git push` to a deny or ask rule.
  const bare = bareCommandName(part.text);
  if (bare !== part.text) {
    const restriction = strongestMatch(policy.rules, query.tool, { kind: "command", value: bare });
    if (restriction !== undefined && restriction.decision !== "allow") {
      const other = fromRule(restriction, subject);
      if (severity(other.decision) > severity(evaluation.decision)) evaluation = other;
    }
  }
  // A deny or ask rule naming a wrapper seen through (`timeout*`, `sudo*`) still covers its use.
  for (const wrapper of part.wrappers ?? []) {
    const restriction = strongestMatch(policy.rules, query.tool, { kind: "command", value: wrapper });
    const bareRestriction = strongestMatch(policy.rules, query.tool, {
      kind: "command",
      value: bareCommandName(wrapper),
    });
    for (const rule of [restriction, bareRestriction]) {
      if (rule === undefined || rule.decision === "allow") continue;
      const other = fromRule(rule, subject);
      if (severity(other.decision) > severity(evaluation.decision)) evaluation = other;
    }
  }
  // `cat .env` reads what a tool-agnostic ask or deny rule on `.env` keeps from every tool.
  const named = pathRestriction(policy, query, part);
  if (named !== undefined && severity(named.decision) > severity(evaluation.decision)) {
    evaluation = {
      decision: named.decision,
      rule: named.rule.text,
      source: named.rule.source,
      reason: `it names ${named.path}: ${named.rule.decision} rule ${named.rule.text} from ${named.rule.source}`,
      subject,
    };
  }
  if (part.unknown !== undefined && evaluation.decision !== "deny") {
    evaluation = {
      decision: "ask",
      source: PARSER_SOURCE,
      reason: `${part.unknown}, so no rule can allow it`,
      subject,
    };
  } else if (part.opaque !== undefined && evaluation.decision === "allow") {
    const restriction = anyRestriction(policy, query.tool);
    if (restriction !== undefined) {
      evaluation = {
        decision: "ask",
        source: PARSER_SOURCE,
        reason: `${part.opaque}, which the line does not show, and ${restriction.decision} rule ${restriction.text} from ${restriction.source} may cover what it runs`,
        subject,
      };
    }
  } else if (part.dynamicArguments === true && evaluation.decision === "allow") {
    const restriction = restrictionOnCommand(policy, query.tool, part.text);
    if (restriction !== undefined) {
      evaluation = {
        decision: "ask",
        source: PARSER_SOURCE,
        reason: `an argument is only known when it runs, and ${restriction.decision} rule ${restriction.text} from ${restriction.source} may cover it`,
        subject,
      };
    }
  }
  return evaluation;
}

/**
 * The strongest ask or deny rule about a path this part names as an argument (see
 * argument-paths.ts). Configured rules first; the built-in ones (files that usually hold secrets)
 * unless a configured rule decides that path for this tool, or the user allowed exactly this
 * command (a rule with no wildcard: they have seen what it reads).
 */
function pathRestriction(
  policy: Policy,
  query: PermissionQuery,
  part: CommandPart,
): { decision: RuleDecision; rule: Rule; path: string } | undefined {
  const exactlyAllowed = policy.rules.some(
    (rule) =>
      rule.decision === "allow" &&
      rule.pattern !== undefined &&
      !rule.pattern.includes("*") &&
      ruleMatches(rule, query.tool, { kind: "command", value: part.text }),
  );
  let found: { decision: RuleDecision; rule: Rule; path: string } | undefined;
  for (const path of pathArguments(part.text)) {
    const subject: Subject = { kind: "path", value: path };
    const configured = strongestMatch(policy.rules, query.tool, subject);
    const rule =
      configured ?? (exactlyAllowed ? undefined : strongestMatch(policy.defaultRules, query.tool, subject));
    if (rule === undefined || rule.decision === "allow") continue;
    if (found === undefined || rank(rule.decision) > rank(found.decision))
      found = { decision: rule.decision, rule, path };
  }
  return found;
}

/** `/usr/bin/git push` -> `git push`. */
function bareCommandName(text: string): string {
  const space = text.indexOf(" ");
  const name = space === -1 ? text : text.slice(0, space);
  const slash = name.lastIndexOf("/");
  return slash === -1 || slash === name.length - 1 ? text : text.slice(slash + 1);
}

/**
 * A configured deny or ask rule that could match this command once its run-time arguments are
 * known: one for the same command name (`git push*` for `git $P`), or one that starts with a
 * wildcard (`*curl*`).
 */
function restrictionOnCommand(policy: Policy, tool: string, text: string): Rule | undefined {
  const name = bareCommandName(text).split(" ")[0] ?? "";
  let found: Rule | undefined;
  for (const rule of policy.rules) {
    if (rule.decision === "allow" || rule.pattern === undefined) continue;
    if (!toolMatches(rule.tool, tool)) continue;
    const literal = rule.pattern.split("*")[0] ?? "";
    const ruleName = bareCommandName(literal.trim()).split(" ")[0] ?? "";
    const covers =
      literal === "" || ruleName === name || (!literal.includes(" ") && name.startsWith(literal));
    if (covers && (found === undefined || rank(rule.decision) > rank(found.decision))) found = rule;
  }
  return found;
}

/** The strongest configured deny or ask rule on this tool's commands: any could cover code the line does not show. */
function anyRestriction(policy: Policy, tool: string): Rule | undefined {
  let found: Rule | undefined;
  for (const rule of policy.rules) {
    if (rule.decision === "allow" || rule.pattern === undefined || !toolMatches(rule.tool, tool)) continue;
    if (found === undefined || rank(rule.decision) > rank(found.decision)) found = rule;
  }
  return found;
}

/** deny > ask > propose > allow. */
function severity(decision: PermissionVerdict): number {
  return decision === "deny" ? 3 : decision === "ask" ? 2 : decision === "propose" ? 1 : 0;
}

/** One subject under the rules, the read-only mode, the built-in rules and the defaults. */
function evaluateSubject(policy: Policy, tool: string, effect: EffectClass, subject: Subject): Evaluation {
  const configured = strongestMatch(policy.rules, tool, subject);
  if (configured?.decision === "deny") return fromRule(configured, subject);
  if (policy.readOnly.value && WRITE_EFFECTS.has(effect)) {
    return {
      decision: "deny",
      source: policy.readOnly.source,
      reason: `the run is read-only: ${effect} calls are denied`,
      subject,
    };
  }
  if (configured !== undefined) return fromRule(configured, subject);

  const builtIn = strongestMatch(policy.defaultRules, tool, subject);
  if (builtIn !== undefined) return fromRule(builtIn, subject);

  const modes: EffectiveModes = {
    write: policy.write.value,
    shell: policy.shell.value,
    readOnly: policy.readOnly.value,
  };
  const fallback = defaultDecision(effect, modes);
  const source =
    effect === "local_write"
      ? policy.write.source
      : effect === "process_execution"
        ? policy.shell.source
        : DEFAULT_SOURCE;
  return {
    decision: fallback.decision,
    source,
    reason: `no rule matched; ${fallback.reason}`,
    subject,
  };
}

/** The matching rule with the strongest decision; among equals, the one from the latest source. */
function strongestMatch(rules: readonly Rule[], tool: string, subject: Subject): Rule | undefined {
  let best: Rule | undefined;
  for (const rule of rules) {
    if (!ruleMatches(rule, tool, subject)) continue;
    if (best === undefined || rank(rule.decision) >= rank(best.decision)) best = rule;
  }
  return best;
}

function rank(decision: RuleDecision): number {
  return decision === "deny" ? 2 : decision === "ask" ? 1 : 0;
}

function fromRule(rule: Rule, subject: Subject): Evaluation {
  return {
    decision: rule.decision,
    rule: rule.text,
    source: rule.source,
    reason: `${rule.decision} rule ${rule.text} from ${rule.source}`,
    subject,
  };
}
