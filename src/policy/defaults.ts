import type { RuleDecision } from "../rules/grammar.js";
import type { ShellMode, WriteMode } from "../rules/modes.js";
import type { PermissionVerdict } from "../runtime/ports.js";
import type { EffectClass } from "../tools/tool.js";

export const DEFAULT_SOURCE = "default";

/**
 * Writes are workspace-bound and version-checked, so they run by default; commands can reach
 * anything the process can, so they ask.
 */
export const DEFAULT_WRITE_MODE: WriteMode = "allow";
export const DEFAULT_SHELL_MODE: ShellMode = "ask";

/**
 * Built-in rules. They are consulted only when no configured rule matches, so a user's own
 * `allow read_file(.env)` can override them (configured rules are order-independent and a
 * built-in deny would otherwise be impossible to lift).
 */
export const DEFAULT_RULES: Readonly<Record<RuleDecision, readonly string[]>> = {
  // web_fetch is decided per connection, like a command's network: every hop must be allowed by
  // a net(HOST[:PORT]) rule (no rule: denied), so the call itself needs no second question.
  allow: ["web_fetch"],
  // Files that usually hold secrets: reading or changing them is the user's call.
  ask: [
    "*(**/.env)",
    "*(**/.env.local)",
    "*(**/.env.*.local)",
    "*(**/*.pem)",
    "*(**/id_rsa)",
    "*(**/id_ed25519)",
  ],
  deny: [],
};

/** The lower rank is the more permissive; an untrusted project may only raise a mode's rank. */
const STRICTNESS: Record<WriteMode, number> = { allow: 0, ask: 1, propose: 2, deny: 3 };

export function stricterWriteMode(current: WriteMode, requested: WriteMode): WriteMode {
  return STRICTNESS[requested] > STRICTNESS[current] ? requested : current;
}

export function stricterShellMode(current: ShellMode, requested: ShellMode): ShellMode {
  return STRICTNESS[requested] > STRICTNESS[current] ? requested : current;
}

export interface EffectiveModes {
  write: WriteMode;
  shell: ShellMode;
  readOnly: boolean;
}

/** The decision for a call that no rule matched, with the reason in words. */
export function defaultDecision(
  effect: EffectClass,
  modes: EffectiveModes,
): { decision: PermissionVerdict; reason: string } {
  switch (effect) {
    case "pure":
    case "read_only":
      return { decision: "allow", reason: `${effect} calls are allowed by default` };
    case "local_write":
      if (modes.readOnly) return { decision: "deny", reason: "the run is read-only (--read-only)" };
      return { decision: modes.write, reason: `write mode is ${modes.write}` };
    case "process_execution":
      return { decision: modes.shell, reason: `shell mode is ${modes.shell}` };
    case "network_read":
    case "network_write":
    case "external_side_effect":
    case "destructive":
      return { decision: "ask", reason: `${effect} calls ask by default` };
  }
}
