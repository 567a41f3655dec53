/**
 * Denial texts the model reads. Each says who said no and that the same call must not be
 * repeated unchanged, so the model changes approach instead of retrying.
 */
export type DenialCode = "POLICY_DENIED" | "USER_DENIED" | "HOOK_DENIED";

export function policyDenialMessage(tool: string, reason: string): string {
  return `${tool} was blocked by policy (${reason}). Do not repeat the same call unchanged; choose another approach.`;
}

export function userDenialMessage(tool: string, reason?: string): string {
  const why = reason === undefined ? "" : ` (${reason})`;
  return `The user declined ${tool}${why}. Do not repeat the same call unchanged; ask or choose another approach.`;
}

export function hookDenialMessage(tool: string, hook: string, reason?: string): string {
  const why = reason === undefined ? "" : `: ${reason}`;
  return `${tool} was blocked by hook ${hook}${why}. Do not repeat the same call unchanged; choose another approach.`;
}
