import { createHash } from "node:crypto";
import { LIVE_JS } from "./script-live.js";
import { TIMELINE_JS } from "./script-timeline.js";
import { VIEWER_CSS } from "./styles.js";

/**
 * The session viewer: one HTML document with its CSS and JavaScript inline, so it needs nothing
 * from anywhere (it works offline, and a report is one file). `harness serve --http` serves the
 * live page at GET /; `harness report` writes the static one with the session's records inside.
 *
 * The Content-Security-Policy pins the page's one script and one stylesheet by their SHA-256
 * rather than by a nonce: the live page is the same bytes on every response and a report is a
 * file, so a hash admits exactly the code harness ships and nothing injected beside it, with no
 * per-response secret for the server to mint. Everything else is 'none' except, on the live page,
 * connections to its own origin.
 */

const SCRIPT = `"use strict";\n{\n${TIMELINE_JS}\n${LIVE_JS}\n}\n`;
const STYLE = VIEWER_CSS;

const sha256 = (text: string): string =>
  `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

function policy(connect: "'self'" | "'none'"): string {
  return [
    "default-src 'none'",
    `script-src ${sha256(SCRIPT)}`,
    `style-src ${sha256(STYLE)}`,
    `connect-src ${connect}`,
    "img-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
}

/** The live page's policy, for a server to send as its Content-Security-Policy header too. */
export const VIEWER_CSP = policy("'self'");
/** The report's: no connection at all. */
export const REPORT_CSP = policy("'none'");

/** What the report says about the journal it shows (rendered as text; nothing in it is markup). */
export interface ReportMeta {
  session: string;
  /** When the report was written (ISO 8601). */
  generated: string;
  verdict: { ok: boolean; records: number; problems: string[]; detail?: string };
}

/** The fields of a journal record the page reads; records are embedded exactly as journaled. */
export interface ViewerRecord {
  seq: number;
  type: string;
  time: string;
  data: unknown;
}

function page(csp: string, data: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>harness session viewer</title>
<style>${STYLE}</style>
</head>
<body>
<header><h1>harness</h1><span id="mode"></span></header>
<p id="error" role="alert" hidden></p>
<main>
<nav id="sessions" hidden><h2>Sessions</h2><button id="refresh" type="button">Refresh</button><ul id="session-list"></ul></nav>
<section id="session">
<div id="summary"></div>
<div id="totals"></div>
<div id="approvals" hidden></div>
<ol id="timeline"></ol>
<div id="streaming"></div>
<form id="prompt" hidden>
<label for="prompt-text">Prompt</label>
<textarea id="prompt-text" rows="3"></textarea>
<div class="buttons"><button type="submit" id="prompt-send" disabled>Send as the next turn</button><button type="button" id="prompt-new">Start a new session</button><label for="prompt-workspace">in</label><select id="prompt-workspace"></select></div>
</form>
</section>
</main>
${data}<script>${SCRIPT}</script>
</body>
</html>
`;
}

/** The live page (the same bytes every time: it reads `?token=` and `?session=` itself). */
export function viewerPage(): string {
  return page(VIEWER_CSP, "");
}

/**
 * JSON that is safe inside a `<script type="application/json">` element: no `<` can close the
 * element or open a comment, and U+2028/U+2029 are escaped like every other line terminator.
 */
export function embeddedJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

/**
 * A sub-agent's own session for the report, keyed in its parent by the `agent` call that started
 * it: its records (exactly as journaled) and its own sub-agents.
 */
export interface ReportAgent {
  session: string;
  label: string;
  records: readonly ViewerRecord[];
  agents: Record<string, ReportAgent>;
}

/**
 * The static report: the page with the session's records inside (and each sub-agent's, shown
 * under the call that started it); it makes no request at all.
 */
export function reportHtml(
  records: readonly ViewerRecord[],
  meta: ReportMeta,
  agents: Record<string, ReportAgent> = {},
): string {
  const data = `<script type="application/json" id="harness-data">${embeddedJson({ meta, records, agents })}</script>\n`;
  return page(REPORT_CSP, data);
}
