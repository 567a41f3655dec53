import type { EventData } from "../journal/vocabulary.js";
import { canonicalJson, sha256Hex } from "../shared/hash.js";

/** Keys by header: a session's header never changes, and every request asks for its key. */
const keys = new WeakMap<EventData<"session.started">, string>();

/**
 * The session's prompt cache key: a digest of its session.started record, so it is the same for
 * every request of the session (a resume included) and reveals nothing the digest was made of
 * (the workspace path, the goal). Providers use it to route requests to the same cache.
 */
export function promptCacheKey(header: EventData<"session.started"> | undefined): string | undefined {
  if (header === undefined) return undefined;
  let key = keys.get(header);
  if (key === undefined) {
    key = `harness-${sha256Hex(canonicalJson(header)).slice(0, 32)}`;
    keys.set(header, key);
  }
  return key;
}
