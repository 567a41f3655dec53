import type { AnyRecord } from "../journal/vocabulary.js";
import type { PermissionDecision, PermissionPort, PermissionRequest } from "../runtime/ports.js";
import type { JsonObject } from "../shared/json.js";

/** The editor's session modes: harness's write modes, strictest first. */
export const WRITE_MODES = ["read-only", "propose", "ask", "allow"] as const;
export type WriteMode = (typeof WRITE_MODES)[number];

export function isWriteMode(value: unknown): value is WriteMode {
  return typeof value === "string" && (WRITE_MODES as readonly string[]).includes(value);
}

const rank = (mode: WriteMode): number => WRITE_MODES.indexOf(mode);

/** Whether `mode` lets through no more than `ceiling` does. */
export function withinCeiling(mode: WriteMode, ceiling: WriteMode): boolean {
  return rank(mode) <= rank(ceiling);
}

/**
 * The loosest mode a session's configuration allows, read from the policy it records
 * (`policy.describe`): user config, project config and flags already merged, so a mode switch
 * can never go past what the person configured.
 */
export function ceilingOf(policy: JsonObject): WriteMode {
  const readOnly = (policy.read_only as { value?: unknown } | undefined)?.value === true;
  const write = (policy.write as { mode?: unknown } | undefined)?.mode;
  if (readOnly || write === "deny") return "read-only";
  return isWriteMode(write) ? write : "read-only";
}

/** The mode a recorded session is in: session.started's setup, then each `mode.switched`. */
export function recordedMode(records: readonly AnyRecord[]): WriteMode | undefined {
  let mode: WriteMode | undefined;
  for (const record of records) {
    if (record.type === "session.started") {
      const recorded = record.data.options?.mode;
      if (isWriteMode(recorded)) mode = recorded;
    } else if (record.type === "mode.switched") mode = record.data.to;
  }
  return mode;
}

/** Effects a write mode governs: what changes files (a command is governed by the shell mode). */
const WRITING = new Set(["local_write", "destructive"]);

/**
 * The session's recorded policy narrowed to the editor's mode. The recorded policy (and its
 * digest, which a resume checks) never changes: the mode can only make a decision stricter,
 * never turn a deny or an ask into an allow.
 */
export class ModePermissions implements PermissionPort {
  constructor(
    private readonly base: PermissionPort,
    private readonly mode: () => WriteMode,
  ) {}

  deniesOutright(tool: string): boolean {
    return this.base.deniesOutright?.(tool) ?? false;
  }

  async decide(request: PermissionRequest): Promise<PermissionDecision> {
    const decided = await this.base.decide(request);
    const mode = this.mode();
    const writes = WRITING.has(request.effect);
    const runs = request.effect === "process_execution";
    if (decided.decision === "deny" || mode === "allow") return decided;
    const narrowed = (decision: PermissionDecision["decision"], why: string): PermissionDecision => ({
      ...decided,
      decision,
      rule: `mode ${mode}`,
      source: "editor mode (session/set_mode)",
      reason: why,
    });
    if (mode === "read-only" && (writes || runs))
      return narrowed("deny", "the session is in read-only mode: nothing is written or run");
    if (mode === "propose" && writes) return narrowed("propose", "the session is in propose mode");
    if (mode === "ask" && writes && decided.decision !== "ask")
      return narrowed("ask", "the session is in ask mode: every write is asked");
    return decided;
  }
}
