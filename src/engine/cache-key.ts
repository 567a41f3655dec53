import type { EventData } from "../journal/vocabulary.js";
import { canonicalJson, sha256Hex } from "../shared/hash.js";

/**
 * The session's prompt cache key: a digest of its session.started record, so it is the same for
 * every request of the session (a resume included) and reveals nothing the digest was made of
 * (the workspace path, the goal). Providers use it to route requests to the same cache.
 */
export function promptCacheKey(header: EventData<"session.started"> | undefined): string | undefined {
  if (header === undefined) return undefined;
  return `harness-${sha256Hex(canonicalJson(header)).slice(0, 32)}`;
}
