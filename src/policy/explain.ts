import type { SubjectKind } from "../runtime/ports.js";
import type { JsonObject } from "../shared/json.js";
import { escapeForTerminal } from "../shared/terminal-text.js";
import type { EffectClass } from "../tools/tool.js";
import { type Evaluation, evaluate, type PermissionQuery } from "./evaluation.js";
import { aliasesOf, type PathResolver } from "./path-aliases.js";
import type { Policy } from "./permissions.js";
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
  const aliases = await aliasesOf(subject, resolvePath);
  if (aliases.length > 0) query.aliases = aliases;
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
