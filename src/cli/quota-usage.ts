import type { AnyRecord, EventData } from "../journal/vocabulary.js";
import { escapeForTerminal } from "../shared/terminal-text.js";

/*
 * What a session's own model requests took of the quotas shared with other sessions, read from
 * its `quota.*` records: one entry per quota (a resumed session may have run under another door's).
 * `left` is the store's last word in the journal, not what the quota holds now: other sessions
 * spend from it too.
 */

type Amount = { usd: number; tokens: number; requests: number };
type Left = NonNullable<EventData<"quota.settled">["left"]>;

export interface QuotaUsage {
  quota: string;
  /** What settled requests spent, as reported by the provider. */
  spent: Amount;
  /** Estimates held and never settled (a crash between reserve and settle): charged as held. */
  held: Amount;
  /** Requests the quota refused (none was sent). */
  refused: number;
  /** What the quota had left, as the last record that said so recorded it; null when none did. */
  left: Left | null;
}

const zero = (): Amount => ({ usd: 0, tokens: 0, requests: 0 });
const add = (into: Amount, amount: Amount) => {
  into.usd += amount.usd;
  into.tokens += amount.tokens;
  into.requests += amount.requests;
};

/** One entry per quota the session's requests reserved against, in order of first use. */
export function quotaUsage(records: readonly AnyRecord[]): QuotaUsage[] {
  const quotas = new Map<string, QuotaUsage & { open: Map<string, Amount> }>();
  const entry = (quota: string) => {
    let found = quotas.get(quota);
    if (found === undefined) {
      found = { quota, spent: zero(), held: zero(), refused: 0, left: null, open: new Map() };
      quotas.set(quota, found);
    }
    return found;
  };
  for (const record of records) {
    if (
      record.type !== "quota.reserved" &&
      record.type !== "quota.settled" &&
      record.type !== "quota.refused"
    )
      continue;
    const { data } = record;
    const found = entry(data.quota);
    const amount = { usd: data.usd, tokens: data.tokens, requests: data.requests };
    const request = `${data.step}/${data.attempt}`;
    if (record.type === "quota.reserved") found.open.set(request, amount);
    else if (record.type === "quota.settled") {
      found.open.delete(request);
      add(found.spent, amount);
    } else found.refused += 1;
    if (data.left !== undefined) found.left = data.left;
  }
  return [...quotas.values()].map(({ open, ...usage }) => {
    for (const amount of open.values()) add(usage.held, amount);
    return usage;
  });
}

/** The text line of one quota: what was spent and held, what was refused, what was left. */
export function quotaLine(usage: QuotaUsage): string {
  const spent = usage.spent;
  const held = usage.held.requests > 0 ? `; ${usage.held.requests} held, never settled` : "";
  const refused = usage.refused > 0 ? `; ${usage.refused} refused` : "";
  return (
    `${escapeForTerminal(usage.quota)}: ${spent.requests} requests, ${spent.tokens} tokens, $${spent.usd.toFixed(4)} spent` +
    `${held}${refused}; left ${leftText(usage.left)}`
  );
}

/** What is left, per limit the quota has ("unknown" when no record said). */
export function leftText(left: Left | null | undefined): string {
  if (left === null || left === undefined) return "unknown";
  const parts: string[] = [];
  if (left.usd !== undefined) parts.push(`$${Math.max(0, left.usd).toFixed(4)}`);
  if (left.tokens !== undefined) parts.push(`${Math.max(0, left.tokens)} tokens`);
  if (left.requests !== undefined) parts.push(`${Math.max(0, left.requests)} requests`);
  return parts.length > 0 ? parts.join(", ") : "no limit";
}
