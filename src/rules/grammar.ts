import { CodedError } from "../shared/coded-error.js";
import { formatNetTarget, NET_TOOL, parseNetPattern } from "./net-pattern.js";
/**
 * The permission rule grammar, `TOOL` or `TOOL(PATTERN)`: what a user writes in config files and
 * after --allow/--ask/--deny. Config validates rules with it when a file loads (so an error names
 * the file and the rule); policy parses them again to evaluate calls (src/policy/rules.ts matches).
 */

/** What a rule says about the calls it matches. */
export type RuleDecision = "allow" | "ask" | "deny";
export const RULE_DECISIONS: readonly RuleDecision[] = ["allow", "ask", "deny"];

/** A parsed rule; `pattern` absent means "every call of this tool". */
export interface Rule {
  decision: RuleDecision;
  /** Canonical rule text, e.g. `read_file(src/**)`. */
  text: string;
  /** A tool name, or a pattern of names where `*` matches any run of characters ("*": every tool). */
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

// Tool names as the registry and MCP adapters spell them (e.g. `read_file`, `mcp__github__search`);
// `*` matches any run of name characters, so one rule can cover a server's tools (`mcp__github__*`).
const TOOL_NAME = /^[A-Za-z_*][A-Za-z0-9_.:*-]*$/;
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
  if (tool === NET_TOOL) {
    // A network rule names hosts, not paths or commands: checked here so a typo fails at load.
    const net = parseNetPattern(pattern);
    if (typeof net === "string") fail(net);
    const { host, port } = net as Exclude<typeof net, string>;
    const canonical = formatNetTarget(host, port);
    return { decision, text: `${tool}(${canonical})`, tool, pattern: canonical, source: origin };
  }
  return { decision, text: `${tool}(${pattern})`, tool, pattern, source: origin };
}

function checkToolName(name: string, fail: (problem: string) => never): void {
  if (name === "") fail("missing tool name");
  if (name !== "*" && !TOOL_NAME.test(name)) {
    fail(
      "a tool name is letters, digits, '_', '.', ':' or '-', where '*' matches any run of them (e.g. mcp__github__*; '*' alone is every tool)",
    );
  }
}
