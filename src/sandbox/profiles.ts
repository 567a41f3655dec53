import type { SandboxProfile } from "./sandbox.js";

/** A profile as users spell it in config files and flags (`off` is the `none` profile). */
export type SandboxChoice = "off" | "workspace-write" | "read-only";

/**
 * What the session imposes on every command, over what a config chose: `off` is the user's own
 * `--sandbox off` for a new session; `read-only` comes from a read-only or propose run, where no
 * command may change the workspace.
 */
export type SandboxOverride = "off" | "read-only";

const LOOSENESS: Record<SandboxProfile, number> = { "read-only": 0, "workspace-write": 1, none: 2 };

export function profileOf(choice: SandboxChoice): SandboxProfile {
  return choice === "off" ? "none" : choice;
}

/** Whether `candidate` gives a command more access than `baseline`. */
export function isLooser(candidate: SandboxProfile, baseline: SandboxProfile): boolean {
  return LOOSENESS[candidate] > LOOSENESS[baseline];
}

/**
 * The profile a command runs under: the configured one (else `fallback`), then the override:
 * `off` turns the sandbox off, `read-only` tightens anything that is still sandboxed. A command
 * whose user configured it `off` stays off: that is the user's explicit choice.
 */
export function commandProfile(
  configured: SandboxChoice | undefined,
  fallback: SandboxProfile,
  override: SandboxOverride | undefined,
): SandboxProfile {
  const chosen = configured === undefined ? fallback : profileOf(configured);
  if (override === "off") return "none";
  if (override === "read-only" && chosen !== "none") return "read-only";
  return chosen;
}
