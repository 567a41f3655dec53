import { parseRule, RULE_DECISIONS, type Rule, type RuleDecision } from "../rules/grammar.js";
import type { ShellMode, WriteMode } from "../rules/modes.js";
import type { Subject } from "../runtime/ports.js";
import { digestOf } from "../shared/hash.js";
import type { JsonObject } from "../shared/json.js";
import {
  DEFAULT_RULES,
  DEFAULT_SHELL_MODE,
  DEFAULT_SOURCE,
  DEFAULT_WRITE_MODE,
  stricterShellMode,
  stricterWriteMode,
} from "./defaults.js";
import { ruleMatches } from "./rules.js";

/**
 * One source of permission settings, as the config loader or the CLI produced it.
 * An untrusted layer (a project config the user has not trusted) may only tighten: its `allow`
 * rules and any loosening of a mode are ignored and reported.
 */
export interface PermissionLayer extends PermissionSettings {
  /** Provenance label shown in explanations, e.g. "project config (harness.config.json)". */
  source: string;
  trusted: boolean;
}

/** Rules by decision and modes, as one source states them (the CLI's flags carry exactly these). */
export interface PermissionSettings {
  allow?: readonly string[];
  ask?: readonly string[];
  deny?: readonly string[];
  write?: WriteMode;
  shell?: ShellMode;
  readOnly?: boolean;
}

/** A setting that was present in a source but has no effect, and why. */
export interface IgnoredSetting {
  /** Rule text, or `write=allow` / `shell=allow` for a mode. */
  setting: string;
  decision?: RuleDecision;
  source: string;
  reason: string;
}

export interface ModeSetting<T> {
  value: T;
  source: string;
}

/** The effective policy of a run. Immutable; `digest` is part of the session identity. */
export interface Policy {
  readonly rules: readonly Rule[];
  readonly defaultRules: readonly Rule[];
  readonly ignored: readonly IgnoredSetting[];
  readonly write: ModeSetting<WriteMode>;
  readonly shell: ModeSetting<ShellMode>;
  readonly readOnly: ModeSetting<boolean>;
  /** SHA-256 of the RFC 8785 JSON of the normalized rules and modes (order-independent). */
  readonly digest: string;
  /** JSON for the journal's session.started `policy`. */
  describe(): JsonObject;
}

interface IgnoredRule extends IgnoredSetting {
  parsed: Rule;
}

/** Ignored rules with their parsed form, kept off the public object so it stays plain data. */
const ignoredRulesOf = new WeakMap<Policy, readonly IgnoredRule[]>();

const UNTRUSTED_REASON = "a project config may only add deny/ask rules unless the project is trusted";

/**
 * Combine layers (in increasing precedence: user config, project config, CLI) over the built-in
 * defaults. Throws RuleSyntaxError naming the layer's source and the rule when one does not parse.
 */
export function buildPolicy(layers: readonly PermissionLayer[]): Policy {
  const rules: Rule[] = [];
  const ignored: IgnoredRule[] = [];
  let write: ModeSetting<WriteMode> = { value: DEFAULT_WRITE_MODE, source: DEFAULT_SOURCE };
  let shell: ModeSetting<ShellMode> = { value: DEFAULT_SHELL_MODE, source: DEFAULT_SOURCE };
  let readOnly: ModeSetting<boolean> = { value: false, source: DEFAULT_SOURCE };

  for (const layer of layers) {
    for (const decision of RULE_DECISIONS) {
      for (const text of layer[decision] ?? []) {
        const rule = parseRule(decision, text, layer.source);
        if (decision === "allow" && !layer.trusted) {
          ignored.push({
            setting: rule.text,
            decision,
            source: layer.source,
            reason: UNTRUSTED_REASON,
            parsed: rule,
          });
        } else {
          rules.push(rule);
        }
      }
    }
    if (layer.write !== undefined) {
      const value = layer.trusted ? layer.write : stricterWriteMode(write.value, layer.write);
      if (value === layer.write) write = { value, source: layer.source };
      else ignoredMode(ignored, `write=${layer.write}`, layer.source);
    }
    if (layer.shell !== undefined) {
      const value = layer.trusted ? layer.shell : stricterShellMode(shell.value, layer.shell);
      if (value === layer.shell) shell = { value, source: layer.source };
      else ignoredMode(ignored, `shell=${layer.shell}`, layer.source);
    }
    if (layer.readOnly === true) readOnly = { value: true, source: layer.source };
    else if (layer.readOnly === false && readOnly.value) {
      if (layer.trusted) readOnly = { value: false, source: layer.source };
      else ignoredMode(ignored, "read_only=false", layer.source);
    }
  }

  const defaultRules = RULE_DECISIONS.flatMap((decision) =>
    DEFAULT_RULES[decision].map((text) => parseRule(decision, text, DEFAULT_SOURCE)),
  );
  return makePolicy(rules, defaultRules, ignored, write, shell, readOnly);
}

function ignoredMode(ignored: IgnoredRule[], setting: string, source: string): void {
  // A mode entry has no rule to match, so its placeholder never matches a call.
  const parsed: Rule = { decision: "allow", text: setting, tool: "", source };
  ignored.push({
    setting,
    source,
    reason: "an untrusted project config may only make modes stricter",
    parsed,
  });
}

function makePolicy(
  rules: Rule[],
  defaultRules: Rule[],
  ignored: IgnoredRule[],
  write: ModeSetting<WriteMode>,
  shell: ModeSetting<ShellMode>,
  readOnly: ModeSetting<boolean>,
): Policy {
  const normalized = {
    rules: normalizedRules(rules),
    default_rules: normalizedRules(defaultRules),
    write: write.value,
    shell: shell.value,
    read_only: readOnly.value,
  };
  const publicIgnored = ignored.map(({ parsed: _parsed, ...setting }) => setting);
  const policy: Policy = {
    rules: Object.freeze(rules.map((rule) => Object.freeze(rule))),
    defaultRules: Object.freeze(defaultRules),
    ignored: Object.freeze(publicIgnored),
    write,
    shell,
    readOnly,
    digest: digestOf(normalized),
    describe: () => ({
      rules: rules.map((rule) => ({ decision: rule.decision, rule: rule.text, source: rule.source })),
      default_rules: normalized.default_rules,
      write: { mode: write.value, source: write.source },
      shell: { mode: shell.value, source: shell.source },
      read_only: { value: readOnly.value, source: readOnly.source },
      ignored: publicIgnored.map((entry) => ({ ...entry })),
    }),
  };
  Object.freeze(policy);
  ignoredRulesOf.set(policy, ignored);
  return policy;
}

/** Sorted, de-duplicated `[decision, rule]` pairs: sources and order do not change decisions. */
function normalizedRules(rules: readonly Rule[]): string[][] {
  const unique = new Set(rules.map((rule) => JSON.stringify([rule.decision, rule.text])));
  return [...unique].sort().map((entry) => JSON.parse(entry) as string[]);
}

/** The settings this policy ignored that would have matched a call on `subject` by `tool`. */
export function matchingIgnored(policy: Policy, tool: string, subject: Subject): IgnoredSetting[] {
  const all = ignoredRulesOf.get(policy) ?? [];
  return all
    .filter((entry) => entry.parsed.tool !== "" && ruleMatches(entry.parsed, tool, subject))
    .map(({ parsed: _parsed, ...setting }) => setting);
}
