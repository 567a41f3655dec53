/**
 * How far a session may delegate: `depth` (how many levels of children below the root: 1 means
 * children cannot delegate), `concurrent` (children running at once; calls past it wait their
 * turn) and `max` (children per session; calls past it are refused). A session records them, so
 * its children, and its resume, hold to the limits it started with.
 */
export interface AgentLimits {
  depth: number;
  concurrent: number;
  max: number;
}

export const DEFAULT_AGENT_LIMITS: AgentLimits = { depth: 1, concurrent: 4, max: 16 };

/**
 * A session recorded before delegation existed has no agent limits: it keeps the tools it was
 * recorded with (no `agent`), so its resume is not refused for a changed tool surface.
 */
export const NO_DELEGATION: AgentLimits = { depth: 0, concurrent: 0, max: 0 };

/** The limits in force: given now over recorded over the defaults of a new session. */
export function effectiveAgentLimits(
  given: { [K in keyof AgentLimits]?: AgentLimits[K] | undefined } | undefined,
  recorded: Partial<AgentLimits> | undefined,
  newSession: boolean,
): AgentLimits {
  const base = newSession
    ? DEFAULT_AGENT_LIMITS
    : recorded
      ? { ...DEFAULT_AGENT_LIMITS, ...recorded }
      : NO_DELEGATION;
  return { ...base, ...definedOnly(given) };
}

function definedOnly(
  value: { [K in keyof AgentLimits]?: AgentLimits[K] | undefined } | undefined,
): Partial<AgentLimits> {
  const out: Partial<AgentLimits> = {};
  for (const key of ["depth", "concurrent", "max"] as const)
    if (value?.[key] !== undefined) out[key] = value[key];
  return out;
}
