/**
 * The page GET / serves. The session viewer (src/viewer) replaces this placeholder; it is one
 * function so that change is one line.
 */
export function serverPage(): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>harness</title></head><body><h1>harness server</h1><p>POST /rpc for JSON-RPC, GET /events?session=ID for a session's events.</p></body></html>`;
}
