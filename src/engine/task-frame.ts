import { z } from "zod";
import type { JsonObject } from "../shared/json.js";
import type { SessionEnvironment } from "./instructions.js";

/**
 * The task frame: what the host will check and what the session may touch, stated to the model in
 * the system message of every request, so it survives every compaction. It is recorded in
 * `session.started` (environment.task) from the same values the session header records (the
 * acceptance commands and the policy), and the text is derived from that record only.
 */

export type TaskFrame = NonNullable<SessionEnvironment["task"]>;

/** Rules stated one by one up to this many; the rest are counted (the policy still applies them). */
const MAX_STATED_RULES = 60;

const describedPolicy = z.object({
  rules: z.array(z.object({ decision: z.string(), rule: z.string() })).catch([]),
  default_rules: z.array(z.tuple([z.string(), z.string()])).catch([]),
  scope: z
    .object({ read: z.array(z.string()), edit: z.array(z.string()) })
    .optional()
    .catch(undefined),
});

/** The frame of a new session, from its acceptance commands and its policy's description. */
export function taskFrame(acceptance: readonly string[], policy: JsonObject): TaskFrame {
  const parsed = describedPolicy.safeParse(policy);
  const described = parsed.success ? parsed.data : { rules: [], default_rules: [], scope: undefined };
  const rules = [
    ...described.rules.map((rule) => `${rule.decision} ${rule.rule}`),
    ...described.default_rules.map(([decision, rule]) => `${decision} ${rule} (default)`),
  ];
  return {
    acceptance: [...acceptance],
    ...(described.scope ? { scope: { read: described.scope.read, edit: described.scope.edit } } : {}),
    rules: [...new Set(rules)],
  };
}

/** The frame as the model reads it. Commands and paths are quoted as JSON strings. */
export function taskFrameText(frame: TaskFrame): string {
  const quoted = (items: readonly string[]) => items.map((item) => JSON.stringify(item)).join(", ");
  const lines = [
    frame.acceptance.length > 0
      ? `- Acceptance checks: when you reply without tool calls, the host runs ${quoted(frame.acceptance)} in the workspace; the task is verified only if every one exits 0.`
      : "- Acceptance checks: none are configured; the host cannot verify the task, so the run ends unverified.",
  ];
  if (frame.scope) {
    const edit = frame.scope.edit.length > 0 ? quoted(frame.scope.edit) : "nothing";
    lines.push(
      `- Task scope: you may read only ${quoted(frame.scope.read)} and change only ${edit}; shell commands are denied.`,
    );
  }
  if (frame.rules.length > 0) {
    const stated = frame.rules.slice(0, MAX_STATED_RULES).join("; ");
    const more =
      frame.rules.length > MAX_STATED_RULES
        ? `; and ${frame.rules.length - MAX_STATED_RULES} more rules`
        : "";
    lines.push(
      `- Permission rules (deny wins over ask, ask over allow; a call no rule matches follows the modes above): ${stated}${more}.`,
    );
  }
  return lines.join("\n");
}
