import type { JsonObject } from "../shared/json.js";

/**
 * Without a terminal there is nobody to ask, so `ask` means deny. Said once at the start of a
 * run: which kinds of call that makes denied, and the flag that allows them. `describe` is the
 * run's policy as policy/permissions.ts describes it ({write: {mode}, shell: {mode}, rules}).
 */
export function offTerminalNotice(describe: JsonObject): string | undefined {
  // Asked, or denied by the no-terminal default (a deny the user chose needs no explaining).
  const unasked = (key: string) => {
    const entry = describe[key];
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return false;
    return entry.mode === "ask" || (entry.mode === "deny" && String(entry.source).startsWith("default"));
  };
  const denied: string[] = [];
  if (unasked("write")) denied.push("file writes and edits (--write allow, or --write propose)");
  if (unasked("shell")) denied.push("shell commands (--shell allow, or --allow 'shell(CMD*)')");
  const rules = Array.isArray(describe.rules) ? describe.rules : [];
  const asking = rules.some(
    (rule) => typeof rule === "object" && rule !== null && !Array.isArray(rule) && rule.decision === "ask",
  );
  if (asking) denied.push("calls your 'ask' rules cover (--allow RULE)");
  if (denied.length === 0) return undefined;
  return `no terminal to ask on, so 'ask' means deny; denied in this run: ${denied.join("; ")}`;
}
