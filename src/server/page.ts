import { VIEWER_CSP, viewerPage } from "../viewer/page.js";

/** The page GET / serves, and the Content-Security-Policy it is sent with: the session viewer (src/viewer). */
export function serverPage(): string {
  return viewerPage();
}

/** The viewer's own policy (its one script and stylesheet pinned by hash), plus what only a header can say. */
export const SERVER_PAGE_CSP = `${VIEWER_CSP}; frame-ancestors 'none'`;
