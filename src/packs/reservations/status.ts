/**
 * How a reservation run ends. The policy's final reply is exactly one of these words; the host
 * checks the claim against the database and the journal before accepting it.
 */
export const FINISH_STATUSES = [
  "reserved",
  "info",
  "insufficient",
  "not_found",
  "ambiguous",
  "denied",
  "policy_error",
  "budget_exhausted",
] as const;

export type FinishStatus = (typeof FINISH_STATUSES)[number];

export function isFinishStatus(value: unknown): value is FinishStatus {
  return typeof value === "string" && (FINISH_STATUSES as readonly string[]).includes(value);
}

/** The claim in a final reply: the exact status word (surrounding whitespace ignored), or undefined. */
export function parseClaim(text: string): FinishStatus | undefined {
  const word = text.trim();
  return isFinishStatus(word) ? word : undefined;
}

/**
 * Permission rules of the executor policy, as stable codes. `write_not_allowed` is the normal
 * "denied" outcome (the user did not authorize writing); every other reserve denial means the
 * decision source proposed something outside the task, which is a policy error.
 */
export const DENIAL_RULES = [
  "out_of_scope",
  "write_not_allowed",
  "bad_arguments",
  "quantity_mismatch",
  "no_unique_hit",
  "item_not_from_search",
  "document_not_read",
  "stock_not_observed",
  "revision_not_observed",
  "idempotency_key_mismatch",
  "unknown_tool",
] as const;

export type DenialRule = (typeof DENIAL_RULES)[number];

/** How a denial reason starts, so a decision source can tell the rule from the observation. */
export function denialReason(rule: DenialRule, text: string): string {
  return `[${rule}] ${text}`;
}

export function denialRuleIn(text: string): DenialRule | undefined {
  const match = /\[([a-z_]+)\]/.exec(text);
  const rule = match?.[1];
  return rule !== undefined && (DENIAL_RULES as readonly string[]).includes(rule)
    ? (rule as DenialRule)
    : undefined;
}
