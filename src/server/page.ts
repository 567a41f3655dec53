import { VIEWER_CSP, viewerPage } from "../viewer/page.js";

/** The page GET / serves: the session viewer (src/viewer). */
export function serverPage(): string {
  return viewerPage();
}

/** The viewer's own policy (its one script and stylesheet by hash), plus what only a header can say. */
export const PAGE_CSP = `${VIEWER_CSP}; frame-ancestors 'none'`;
