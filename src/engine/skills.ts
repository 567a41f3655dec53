import { z } from "zod";
import type { EventData } from "../journal/vocabulary.js";
import { ruleMatches, subjectOf } from "../policy/rules.js";
import type { ModelMessage } from "../protocol/types.js";
import { parseRule, type Rule } from "../rules/grammar.js";
import type { PermissionDecision, PermissionPort, PermissionRequest, SubjectKind } from "../runtime/ports.js";

/**
 * Agent Skills in the engine: a `skill` call's result becomes `skill.activated` (journaled after
 * the calls settle, like nested instructions), and while a skill is active (until the turn ends)
 * its `allowed-tools` narrow what the session may do. Narrowing is a second decision after the
 * session's own: it can turn an allow or ask into a deny, never the other way.
 */

export const SKILL_TOOL = "skill";

export type ActiveSkill = EventData<"skill.activated">;

/** What a `skill` result carries in `data` for the engine to journal (checked: tool output is not trusted). */
const activationData = z.object({
  skill: z.string().min(1),
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  source: z.string(),
  allowed_tools: z.array(z.string()).optional(),
  text: z.string(),
});

/**
 * `skill.activated` records due: successful `skill` calls settled since the last look whose
 * activation is not journaled yet, in commit order.
 */
export function activationsDue(
  history: readonly { call_id: string; name: string; status: string; data?: unknown }[],
  activated: ReadonlySet<string>,
): ActiveSkill[] {
  const due: ActiveSkill[] = [];
  for (const entry of history) {
    if (entry.name !== SKILL_TOOL || entry.status !== "ok" || activated.has(entry.call_id)) continue;
    const parsed = activationData.safeParse(entry.data);
    if (!parsed.success) continue;
    const { skill, digest, source, allowed_tools, text } = parsed.data;
    due.push({
      name: skill,
      digest,
      source,
      call_id: entry.call_id,
      ...(allowed_tools !== undefined ? { allowed_tools } : {}),
      text,
    });
  }
  return due;
}

/** An active skill as pinned after a compaction: its instructions stay in force. */
export function activeSkillMessage(skill: ActiveSkill): ModelMessage {
  return {
    role: "user",
    content: `[Skill "${skill.name}" is active (${skill.source}); its instructions, as loaded:]\n<skill>\n${skill.text}\n</skill>`,
  };
}

/**
 * The session's permissions, narrowed by the active skills' `allowed-tools`: a call must be
 * allowed (or asked) by the session and match some rule of every active skill that declares
 * `allowed-tools`. The `skill` tool itself stays callable (activating another skill only narrows
 * further). A shell line matches only when each simple command the session's policy found in it
 * matches a rule, so `shell(npm test*)` does not cover `npm test; rm -rf ~`.
 */
export class SkillNarrowing implements PermissionPort {
  readonly #rules = new Map<string, Rule[]>();

  constructor(
    private readonly base: PermissionPort,
    private readonly active: () => readonly ActiveSkill[],
    private readonly kinds: (tool: string) => SubjectKind | undefined = () => undefined,
  ) {}

  deniesOutright(tool: string): boolean {
    return this.base.deniesOutright?.(tool) ?? false;
  }

  async decide(request: PermissionRequest): Promise<PermissionDecision> {
    const decision = await this.base.decide(request);
    if (decision.decision === "deny" || request.tool === SKILL_TOOL) return decision;
    for (const skill of this.active()) {
      if (skill.allowed_tools === undefined) continue;
      if (this.#covers(this.#rulesOf(skill), request, decision)) continue;
      return {
        decision: "deny",
        source: `skill ${skill.name}`,
        rule: `allowed-tools: ${skill.allowed_tools.join(" ") || "(none)"}`,
        reason: `outside the allowed-tools of the active skill "${skill.name}" (a skill narrows what this turn may do; it never grants)`,
        ...(decision.subject ? { subject: decision.subject } : {}),
      };
    }
    return decision;
  }

  #rulesOf(skill: ActiveSkill): Rule[] {
    const key = `${skill.call_id}`;
    let rules = this.#rules.get(key);
    if (rules === undefined) {
      rules = [];
      for (const text of skill.allowed_tools ?? []) {
        // Checked when the skill was discovered; a rule that does not parse now matches nothing.
        try {
          rules.push(parseRule("allow", text, `skill ${skill.name}`));
        } catch {}
      }
      this.#rules.set(key, rules);
    }
    return rules;
  }

  #covers(rules: readonly Rule[], request: PermissionRequest, decision: PermissionDecision): boolean {
    const subject = subjectOf(request.arguments, this.kinds(request.tool));
    if (subject.kind === "command" && decision.parts !== undefined && decision.parts.length > 0) {
      return decision.parts.every((part) =>
        rules.some((rule) => ruleMatches(rule, request.tool, { kind: "command", value: part.command })),
      );
    }
    return rules.some((rule) => ruleMatches(rule, request.tool, subject));
  }
}
