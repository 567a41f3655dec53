import type { Rule } from "../rules/grammar.js";
import {
  canonicalHost,
  formatNetTarget,
  NET_TOOL,
  type NetTarget,
  netPatternMatches,
  parseNetPattern,
} from "../rules/net-pattern.js";
import { escapeForTerminal } from "../shared/terminal-text.js";
import type { Policy } from "./permissions.js";
import { toolMatches } from "./rules.js";

/**
 * Deciding one connection, `net(HOST:PORT)`, under the session's rules: deny > ask > allow across
 * every source, with provenance, and denied when no rule matches (the network is opened host by
 * host, never by a default).
 *
 * Only rules whose tool is literally `net` can allow: `allow *` was written for tools and must not
 * open the network as a side effect. A rule whose tool is a wildcard covering `net` (`deny *`,
 * `ask *`) and that has no pattern still counts when it is stricter: it can only narrow, and a
 * user who wrote `deny *` means nothing at all. A wildcard rule with a pattern (`*(**\/.env)`) is
 * about paths or commands and never decides a host.
 */
export interface NetEvaluation {
  decision: "allow" | "ask" | "deny";
  rule?: string;
  source: string;
  reason: string;
  /** `HOST:PORT` as rules show it. */
  target: string;
  /**
   * Whether the deciding rule names this exact host (no wildcard, no bare `net`): only such a
   * rule lets a connection reach a loopback, private or link-local address.
   */
  exact: boolean;
}

export const NO_NET_RULE_SOURCE = "default";

/** Decide a connection to `host:port` (host as the client asked, any case; IPv6 with or without brackets). */
export function evaluateNetwork(policy: Pick<Policy, "rules">, host: string, port: number): NetEvaluation {
  const canonical = canonicalHost(host);
  const target = formatNetTarget(canonical ?? host, port);
  if (canonical === undefined) {
    return {
      decision: "deny",
      source: NO_NET_RULE_SOURCE,
      reason: `${host} is not a valid host name`,
      target,
      exact: false,
    };
  }
  const wanted: NetTarget = { host: canonical, port };
  let best: { rule: Rule; exact: boolean } | undefined;
  for (const rule of policy.rules) {
    const exact = netRuleCovers(rule, wanted);
    if (exact === undefined) continue;
    if (best === undefined || rank(rule.decision) > rank(best.rule.decision)) best = { rule, exact };
    else if (rank(rule.decision) === rank(best.rule.decision) && exact && !best.exact) best = { rule, exact };
  }
  if (best === undefined) {
    return {
      decision: "deny",
      source: NO_NET_RULE_SOURCE,
      reason: `no rule allows ${target}: add --allow 'net(${target})'`,
      target,
      exact: false,
    };
  }
  const { rule, exact } = best;
  return {
    decision: rule.decision,
    rule: rule.text,
    source: rule.source,
    reason: `${rule.decision} rule ${rule.text} from ${rule.source}`,
    target,
    exact: rule.decision === "allow" || rule.decision === "ask" ? exact : false,
  };
}

/**
 * Whether a rule covers the target: undefined when not; otherwise whether it names the host
 * exactly (a literal `net(HOST[:PORT])`).
 */
function netRuleCovers(rule: Rule, target: NetTarget): boolean | undefined {
  if (rule.tool !== NET_TOOL) {
    // Only a stricter, pattern-less wildcard rule (`deny *`, `ask *`) reaches the network.
    if (rule.decision === "allow" || rule.pattern !== undefined || !toolMatches(rule.tool, NET_TOOL)) {
      return undefined;
    }
    return false;
  }
  if (rule.pattern === undefined) return false;
  const pattern = parseNetPattern(rule.pattern);
  if (typeof pattern === "string") return undefined;
  if (!netPatternMatches(pattern, target)) return undefined;
  return !pattern.wildcard;
}

function rank(decision: Rule["decision"]): number {
  return decision === "deny" ? 2 : decision === "ask" ? 1 : 0;
}

/** One paragraph for `harness policy explain net`. */
export function formatNetExplanation(evaluation: NetEvaluation): string {
  const t = escapeForTerminal;
  const lines = [`net ${t(evaluation.target)}: ${evaluation.decision}`, `  because: ${t(evaluation.reason)}`];
  if (evaluation.rule !== undefined) lines.push(`  rule:    ${t(evaluation.rule)}`);
  lines.push(`  source:  ${t(evaluation.source)}`);
  if (evaluation.decision !== "deny") {
    lines.push(
      evaluation.exact
        ? "  private: the rule names this host exactly, so it may reach a loopback, private or link-local address"
        : "  private: loopback, private and link-local addresses are refused (only a rule naming the host exactly reaches them)",
    );
  }
  return lines.join("\n");
}
