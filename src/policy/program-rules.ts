import type { Policy } from "./permissions.js";
import { toolMatches } from "./rules.js";

/**
 * Which deny rules name a program, so the sandbox can make that program unreachable whatever
 * it is called (src/sandbox/denied-programs.ts). A rule names a program when it denies the
 * program with any arguments: its pattern is one word, or one word and ` *`: `shell(curl)`,
 * `shell(curl*)`, `shell(curl *)`, `shell(/usr/bin/curl*)`. The word's last path component is
 * the program's file name, `*` for any run of characters (`shell(cu*)` names every program whose
 * name starts with `cu`). A rule with more words (`shell(git push*)`) is about some uses of a
 * program, not the program: it stays a rule on command lines only. So does a pattern that would
 * name every program (`shell(*)`), which denies every line anyway.
 */
export interface ProgramRule {
  /** The program's file name, `*` for any run of characters. */
  name: string;
  /** The rule's text, `shell(curl*)`. */
  rule: string;
  source: string;
}

export function programRules(policy: Policy, tool = "shell"): ProgramRule[] {
  const found: ProgramRule[] = [];
  for (const rule of policy.rules) {
    if (rule.decision !== "deny" || rule.pattern === undefined || !toolMatches(rule.tool, tool)) continue;
    const pattern = rule.pattern.trim();
    const space = pattern.search(/\s/);
    const word = space === -1 ? pattern : pattern.slice(0, space);
    const rest = space === -1 ? "" : pattern.slice(space).trim();
    if (rest !== "" && rest !== "*") continue;
    const name = word.slice(word.lastIndexOf("/") + 1);
    if (name.replaceAll("*", "") === "") continue;
    found.push({ name, rule: rule.text, source: rule.source });
  }
  return found;
}
