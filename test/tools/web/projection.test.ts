import { describe, expect, it } from "vitest";
import {
  bodyKind,
  htmlToMarkdown,
  MAX_PROJECTION_CHARS,
  projectBody,
} from "../../../src/tools/web/projection.js";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("the projection of a fetched body", () => {
  it("turns HTML into Markdown without scripts, styles or the head", async () => {
    const markdown = await htmlToMarkdown(
      `<html><head><title>Secret title</title><style>body{color:red}</style><script>alert("x")</script></head>
       <body><h1>Install</h1><p>Run <code>npm i</code> then read <a href="/docs">the docs</a>.</p>
       <ul><li>one</li><li>two</li></ul><script>document.write("injected")</script>
       <noscript>enable js</noscript><pre><code>const a = 1;</code></pre></body></html>`,
    );
    expect(markdown).toContain("# Install");
    expect(markdown).toContain("Run `npm i` then read [the docs](/docs).");
    expect(markdown).toMatch(/-\s+one\n-\s+two/);
    expect(markdown).toContain("```\nconst a = 1;\n```");
    for (const gone of ["alert", "injected", "color:red", "Secret title", "enable js"]) {
      expect(markdown).not.toContain(gone);
    }
  });

  it("passes JSON and text through, decodes by charset, and describes binary bodies", async () => {
    expect(await projectBody("application/json", bytes('{"a": 1}'))).toEqual({
      kind: "text",
      text: '{"a": 1}',
      cut: false,
    });
    expect(
      (await projectBody("text/plain; charset=iso-8859-1", new Uint8Array([0x63, 0x61, 0x66, 0xe9]))).text,
    ).toBe("café");
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0]);
    const binary = await projectBody("image/png", png);
    expect(binary.kind).toBe("binary");
    expect(binary.text).toBe(
      "[binary body (image/png, 8 bytes): not shown; the raw bytes are in the artifact]",
    );
    // Undeclared: judged by the bytes.
    expect(bodyKind(undefined, bytes("plain words"))).toBe("text");
    expect(bodyKind("application/octet-stream", png)).toBe("binary");
  });

  it("bounds the projection", async () => {
    const long = await projectBody("text/plain", bytes("x".repeat(MAX_PROJECTION_CHARS + 10)));
    expect(long.cut).toBe(true);
    expect(long.text).toHaveLength(MAX_PROJECTION_CHARS);
  });
});
