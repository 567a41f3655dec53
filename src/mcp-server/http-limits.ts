/** How many 2025-era client sessions the HTTP server keeps, and for how long without use. */
export interface SessionLimits {
  /** Most client sessions open at once; an initialize beyond it is refused (503). */
  max: number;
  /** A session with no request in flight for this long is ended. */
  idleMs: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { max: 16, idleMs: 30 * 60_000 };
