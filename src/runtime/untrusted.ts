import type { EffectClass } from "../tools/tool.js";

/**
 * Untrusted content and what it may not unlock. A result from outside the user's trust (a fetched
 * page, an MCP server not marked trusted) is data: once the model has seen one in a turn, a call
 * that would widen what leaves the machine asks a person even where a rule allows it, and the
 * question names the content that came before. The call-level half is decided here (effects);
 * the connection-level half (a host not contacted before) in the session's network.
 */

/** One untrusted result the model has seen in the current turn. */
export interface UntrustedSeen {
  call_id: string;
  /** The tool that brought it (`web_fetch`, `mcp__server__tool`). */
  name: string;
  /** Where it came from: a URL, an MCP server. */
  provenance: string;
}

/** Effects that reach outside the machine or cannot be undone: after untrusted content they ask. */
export const WIDENING_EFFECTS: ReadonlySet<EffectClass> = new Set<EffectClass>([
  "network_write",
  "external_side_effect",
  "destructive",
]);

const SHOWN = 3;

/** The reason a decision records: which content preceded the call. */
export function untrustedReason(seen: readonly UntrustedSeen[]): string {
  const named = seen.slice(-SHOWN).map((item) => `${item.name} ${item.call_id} (${item.provenance})`);
  const more = seen.length > SHOWN ? ` and ${seen.length - SHOWN} earlier` : "";
  return `untrusted content seen: ${named.join(", ")}${more}`;
}

/** What the session knows of a turn's untrusted content and its past connections. */
export interface UntrustedView {
  /** Untrusted results the model has seen this turn, oldest first. */
  untrusted(): readonly UntrustedSeen[];
  /** Whether a connection to `HOST:PORT` (as rules show it) was allowed earlier in the session. */
  contacted(target: string): boolean;
}

/**
 * The view for parts built before the engine runs (the session's network): the engine attaches
 * its state while a run is open. Detached, nothing has been seen.
 */
export class UntrustedWatch implements UntrustedView {
  private view: UntrustedView | undefined;
  attach(view: UntrustedView | undefined): void {
    this.view = view;
  }
  untrusted(): readonly UntrustedSeen[] {
    return this.view?.untrusted() ?? [];
  }
  contacted(target: string): boolean {
    return this.view?.contacted(target) ?? false;
  }
}
