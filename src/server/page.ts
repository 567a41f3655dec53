/**
 * The page GET / serves, and the Content-Security-Policy it is sent with. The session viewer
 * (src/viewer) replaces this placeholder; both live here so that change is one place.
 */
export function serverPage(): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>harness</title></head><body><h1>harness server</h1><p>POST /rpc for JSON-RPC, GET /events?session=ID for a session's events.</p></body></html>`;
}

/** Nothing but the page itself: no script, no style, connections only to this origin. */
export const SERVER_PAGE_CSP =
  "default-src 'none'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
