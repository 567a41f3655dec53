import type { JsonObject } from "../shared/json.js";
import type { EffectClass } from "../tools/tool.js";
import type { PermissionDecision } from "./defaults.js";
import {
  evaluate,
  type IgnoredSetting,
  type PartEvaluation,
  type PermissionQuery,
  type Policy,
} from "./permissions.js";
import { aliasesOf, type PathResolver } from "./ports.js";
import { type Subject, type SubjectKind, subjectOf } from "./rules.js";
import { loadShellParser } from "./shell-command.js";

/** What `harness policy explain TOOL 'ARGS_JSON'` prints (as JSON or text). */
export interface Explanation {
  decision: PermissionDecision;
  rule?: string;
  source: string;
  reason: string;
  subject: Subject;
  ignored?: IgnoredSetting[];
  resolved?: string;
  parts?: PartEvaluation[];
}

/**
 * Why the policy decides a call the way it does: the deciding rule and where it came from; for
 * a shell command, each simple command with its own rule; for a symlink, the file it leads to.
 */
export async function explain(
  policy: Policy,
  tool: string,
  effect: EffectClass,
  args: JsonObject,
  subjectKind?: SubjectKind,
  resolvePath?: PathResolver,
): Promise<Explanation> {
  const query: PermissionQuery = { tool, effect, args };
  if (subjectKind !== undefined) query.subjectKind = subjectKind;
  const subject = subjectOf(args, subjectKind);
  if (subject.kind === "command") await loadShellParser();
  const aliases = await aliasesOf(subject, resolvePath);
  if (aliases.length > 0) query.aliases = aliases;
  return evaluate(policy, query);
}

/** One human-readable paragraph of an explanation. */
export function formatExplanation(tool: string, explanation: Explanation): string {
  const lines = [`${tool}: ${explanation.decision}`, `  because: ${explanation.reason}`];
  if (explanation.rule !== undefined) lines.push(`  rule:    ${explanation.rule}`);
  lines.push(`  source:  ${explanation.source}`);
  if (explanation.subject.kind !== "none")
    lines.push(`  ${explanation.subject.kind}: ${explanation.subject.value}`);
  if (explanation.resolved !== undefined) lines.push(`  resolves to: ${explanation.resolved}`);
  for (const part of explanation.parts ?? []) {
    const rule = part.rule === undefined ? "" : ` by ${part.rule}`;
    lines.push(`  part:    ${part.command}`);
    lines.push(`           ${part.decision}${rule} (${part.source}): ${part.reason}`);
  }
  for (const entry of explanation.ignored ?? []) {
    lines.push(`  ignored: ${entry.setting} from ${entry.source} (${entry.reason})`);
  }
  return lines.join("\n");
}
