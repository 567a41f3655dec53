import { parseRule } from "../../rules/grammar.js";

/**
 * A skill's `allowed-tools` as harness rules. The field takes harness rules (`read_file`,
 * `shell(npm test*)`) and the specification's space-separated tool names; the names other agents
 * use for the same tools (`Read`, `Bash(git:*)`) are read as harness's. The rules only narrow
 * (engine/skills.ts): a name harness does not know matches nothing, so it can only hold calls back.
 */

const OTHER_AGENTS: Readonly<Record<string, string>> = {
  Read: "read_file",
  Write: "write_file",
  Edit: "edit_file",
  MultiEdit: "edit_file",
  Glob: "glob",
  Grep: "grep",
  Bash: "shell",
};

/** Split on blanks and commas outside parentheses: `shell(npm test*) read_file` is two rules. */
export function splitAllowedTools(field: string | readonly string[]): string[] {
  const texts = typeof field === "string" ? [field] : field;
  const tokens: string[] = [];
  for (const text of texts) {
    let depth = 0;
    let current = "";
    for (const char of text) {
      if (char === "(") depth += 1;
      if (char === ")") depth = Math.max(0, depth - 1);
      if (depth === 0 && (char === "," || /\s/.test(char))) {
        if (current !== "") tokens.push(current);
        current = "";
        continue;
      }
      current += char;
    }
    if (current !== "") tokens.push(current);
  }
  return tokens;
}

/** `Bash(git:*)` → `shell(git*)`, `Read` → `read_file`; harness rules pass through. */
function harnessRule(token: string): string {
  const open = token.indexOf("(");
  const tool = open === -1 ? token : token.slice(0, open);
  const mapped = OTHER_AGENTS[tool];
  if (mapped === undefined) return token;
  if (open === -1) return mapped;
  let pattern = token.slice(open + 1, -1);
  if (mapped === "shell") pattern = pattern.replace(/:\*$/, "*");
  return `${mapped}(${pattern})`;
}

/** The field as canonical rule texts, or the problem with the first one that does not parse. */
export function allowedToolRules(
  field: string | readonly string[],
  origin: string,
): { rules: string[] } | { problem: string } {
  const rules: string[] = [];
  for (const token of splitAllowedTools(field)) {
    try {
      rules.push(parseRule("allow", harnessRule(token), origin).text);
    } catch (error) {
      return { problem: (error as Error).message };
    }
  }
  return { rules };
}
