import type { SubjectKind } from "../runtime/ports.js";
import type { JsonObject } from "../shared/json.js";
import { escapeForTerminal } from "../shared/terminal-text.js";
import type { EffectClass } from "../tools/tool.js";
import { type Evaluation, evaluate, type PermissionQuery } from "./evaluation.js";
import { aliasesOf, type PathResolver } from "./path-aliases.js";
import type { Policy } from "./permissions.js";
import { programRules } from "./program-rules.js";
import { subjectOf } from "./rules.js";
import { loadShellParser } from "./shell-command.js";

/**
 * Why the policy decides a call the way it does: the deciding rule and where it came from; for
 * a shell command, each simple command with its own rule; for a symlink, the file it leads to.
 * The runtime decides through this too (PolicyPermissions), so `harness policy explain` shows
 * exactly what a run would decide.
 */
export async function explain(
  policy: Policy,
  tool: string,
  effect: EffectClass,
  args: JsonObject,
  subjectKind?: SubjectKind,
  resolvePath?: PathResolver,
): Promise<Evaluation> {
  const query: PermissionQuery = { tool, effect, args };
  if (subjectKind !== undefined) query.subjectKind = subjectKind;
  const subject = subjectOf(args, subjectKind);
  if (subject.kind === "command") await loadShellParser();
  // No resolver (a canonical subject, e.g. each file grep's walk listed): no wait for one.
  if (resolvePath !== undefined) {
    const aliases = await aliasesOf(subject, resolvePath);
    if (aliases.length > 0) query.aliases = aliases;
  }
  return evaluate(policy, query);
}

/**
 * One human-readable paragraph of an explanation. Rule text, sources (config file names), paths
 * and command parts come from a project config or the user's argument, so each is escaped for
 * the terminal; only the layout is harness's own.
 */
export function formatExplanation(tool: string, explanation: Evaluation): string {
  const t = escapeForTerminal;
  const lines = [`${t(tool)}: ${explanation.decision}`, `  because: ${t(explanation.reason)}`];
  if (explanation.rule !== undefined) lines.push(`  rule:    ${t(explanation.rule)}`);
  lines.push(`  source:  ${t(explanation.source)}`);
  if (explanation.subject.kind !== "none")
    lines.push(`  ${explanation.subject.kind}: ${t(explanation.subject.value)}`);
  if (explanation.resolved !== undefined) lines.push(`  resolves to: ${t(explanation.resolved)}`);
  for (const part of explanation.parts ?? []) {
    const rule = part.rule === undefined ? "" : ` by ${t(part.rule)}`;
    lines.push(`  part:    ${t(part.command)}`);
    lines.push(`           ${part.decision}${rule} (${t(part.source)}): ${t(part.reason)}`);
  }
  for (const entry of explanation.ignored ?? []) {
    lines.push(`  ignored: ${t(entry.setting)} from ${t(entry.source)} (${t(entry.reason)})`);
  }
  return lines.join("\n");
}

/** How the deny rules that name a program are kept, for `harness policy explain`. */
export interface ProgramRuleNote {
  rule: string;
  source: string;
  /** `sandbox`: the program is replaced by a refusing stub; `advisory`: command lines only. */
  enforced: "sandbox" | "advisory";
}

export function programRuleNotes(policy: Policy, tool: string, sandboxed: boolean): ProgramRuleNote[] {
  return programRules(policy, tool).map(({ rule, source }) => ({
    rule,
    source,
    enforced: sandboxed ? "sandbox" : "advisory",
  }));
}

/** The notes as lines: where a deny rule on a program holds, and, with the sandbox off, that it does not. */
export function formatProgramRuleNotes(notes: readonly ProgramRuleNote[]): string {
  const t = escapeForTerminal;
  const lines: string[] = [];
  for (const note of notes) {
    lines.push(
      note.enforced === "sandbox"
        ? `  note:    ${t(note.rule)} (${t(note.source)}) is enforced by the sandbox: every file of that program it shows is replaced by a stub that refuses to run`
        : `  note:    the sandbox is off, so ${t(note.rule)} (${t(note.source)}) is advisory: deny rules on programs are checked on the command line only (parse-only); the program still runs under another name (a link, a copy), from a script or through a program that runs it`,
    );
  }
  return lines.join("\n");
}
