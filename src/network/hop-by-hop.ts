/**
 * Hop-by-hop headers: meaningful between a client and this proxy (or this proxy and an upstream)
 * only, so never forwarded by any of the proxy's paths (proxy.ts, intercept.ts, plain-forward.ts).
 */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);
