import { createHash } from "node:crypto";

/*
 * Trace and span ids are functions of the journal, never random: a span exported live and the same
 * span exported later by `harness otel export` carry the same ids, so a collector sees one span.
 */

/**
 * The trace of a session: its root session's id (a sub-agent's id is `ROOT/LABEL/...`), hashed to
 * the 16 bytes a W3C trace id has, so a child's spans join its parent's trace.
 */
export function traceIdOf(sessionId: string): string {
  const root = sessionId.split("/")[0] ?? sessionId;
  return nonZero(createHash("sha256").update(`harness.trace:${root}`).digest("hex").slice(0, 32));
}

/**
 * The span a record starts: its hash's first 8 bytes. A record hash is the SHA-256 of a record that
 * chains to every record before it, so it is unique across sessions (a fork re-chains its copy).
 */
export function spanIdOf(recordHash: string): string {
  return nonZero(recordHash.slice(0, 16));
}

/** The W3C `traceparent` header of a span (sampled). */
export function traceparent(traceId: string, spanId: string): string {
  return `00-${traceId}-${spanId}-01`;
}

/** An all-zero id is invalid in W3C trace context: vanishingly unlikely from a hash, replaced anyway. */
function nonZero(id: string): string {
  return /^0+$/.test(id) ? `${id.slice(0, -1)}1` : id;
}
