import type { JsonObject } from "../shared/json.js";
import type { EffectClass } from "../tools/tool.js";
import type { PermissionDecision } from "./defaults.js";
import { evaluate, type IgnoredSetting, type Policy } from "./permissions.js";
import type { Subject, SubjectKind } from "./rules.js";

/** What `harness policy explain TOOL 'ARGS_JSON'` prints (as JSON or text). */
export interface Explanation {
  decision: PermissionDecision;
  rule?: string;
  source: string;
  reason: string;
  subject: Subject;
  ignored?: IgnoredSetting[];
}

/** Why the policy decides a call the way it does: the deciding rule and where it came from. */
export function explain(
  policy: Policy,
  tool: string,
  effect: EffectClass,
  args: JsonObject,
  subjectKind?: SubjectKind,
): Explanation {
  const query = subjectKind === undefined ? { tool, effect, args } : { tool, effect, args, subjectKind };
  return evaluate(policy, query);
}

/** One human-readable paragraph of an explanation. */
export function formatExplanation(tool: string, explanation: Explanation): string {
  const lines = [`${tool}: ${explanation.decision}`, `  because: ${explanation.reason}`];
  if (explanation.rule !== undefined) lines.push(`  rule:    ${explanation.rule}`);
  lines.push(`  source:  ${explanation.source}`);
  if (explanation.subject.kind !== "none")
    lines.push(`  ${explanation.subject.kind}: ${explanation.subject.value}`);
  for (const entry of explanation.ignored ?? []) {
    lines.push(`  ignored: ${entry.setting} from ${entry.source} (${entry.reason})`);
  }
  return lines.join("\n");
}
