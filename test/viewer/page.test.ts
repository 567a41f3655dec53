import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { embeddedJson, REPORT_CSP, reportHtml, VIEWER_CSP, viewerPage } from "../../src/viewer/page.js";

const between = (html: string, open: string, close: string): string[] =>
  html
    .split(open)
    .slice(1)
    .map((part) => part.slice(0, part.indexOf(close)));

const hashOf = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;

describe("the viewer page", () => {
  it("carries its CSP in a meta element, admitting exactly its one inline script and stylesheet by hash", () => {
    const html = viewerPage();
    expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="${VIEWER_CSP}">`);
    const scripts = between(html, "<script>", "</script>");
    const styles = between(html, "<style>", "</style>");
    expect(scripts).toHaveLength(1);
    expect(styles).toHaveLength(1);
    expect(VIEWER_CSP).toBe(
      `default-src 'none'; script-src ${hashOf(scripts[0]!)}; style-src ${hashOf(styles[0]!)}; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'`,
    );
    expect(REPORT_CSP).toBe(VIEWER_CSP.replace("connect-src 'self'", "connect-src 'none'"));
  });

  it("names no other place: no http(s) URL, no external asset, and the same bytes on every call", () => {
    const html = viewerPage();
    expect(html).not.toMatch(/https?:\/\//i);
    expect(html).not.toMatch(/<[^>]+\ssrc=|<link\b|<iframe\b|<object\b/i);
    expect(between(html, "<style>", "</style>")[0]).not.toMatch(/@import|url\(/i);
    expect(viewerPage()).toBe(html);
    // The script inserts session strings as text only.
    expect(html).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
  });
});

describe("the report's embedded records", () => {
  const hostile = { text: "</script><script>alert(1)</script><!-- & \u2028\u2029 -->" };

  it("escape every character that could end the data block or start markup, and parse back to the same value", () => {
    const json = embeddedJson(hostile);
    expect(json).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(json)).toEqual(hostile);
  });

  it("sit in one application/json block that no record can close", () => {
    const html = reportHtml(
      [{ seq: 0, type: "user.input", time: "2026-01-01T00:00:00.000Z", data: hostile }],
      {
        session: "s",
        generated: "2026-01-01T00:00:00.000Z",
        verdict: { ok: true, records: 1, problems: [] },
      },
    );
    const blocks = between(html, '<script type="application/json" id="harness-data">', "</script>");
    expect(blocks).toHaveLength(1);
    expect(JSON.parse(blocks[0]!).records[0].data).toEqual(hostile);
    expect(html).toContain(`content="${REPORT_CSP}"`);
  });
});
