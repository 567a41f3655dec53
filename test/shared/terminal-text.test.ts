import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { escapeForTerminal, escapeLines, jsonForTerminal } from "../../src/shared/terminal-text.js";

/**
 * Reads shown text back into the original: the proof that nothing is lost or disguised. A run of
 * backslashes before an escape body is halved; an odd run ends with the escape's own backslash.
 */
function reveal(shown: string): string {
  return shown.replace(
    /(\\+)(x[0-9a-f]{2}|u[0-9a-f]{4}|u\{[0-9a-f]{1,6}\})?/g,
    (_match, run: string, body: string | undefined) => {
      if (body === undefined) return run;
      const literal = "\\".repeat(Math.floor(run.length / 2));
      if (run.length % 2 === 0) return literal + body;
      const hex = body.startsWith("u{") ? body.slice(2, -1) : body.slice(1);
      return literal + String.fromCodePoint(Number.parseInt(hex, 16));
    },
  );
}

/** Anything a terminal would obey or that hides text; only `\n` may remain, where lines are laid out. */
const FORBIDDEN =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\u{e0000}-\u{e0fff}]|[\ufe00-\ufe0f]/u;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

const hostile = fc.oneof(
  fc.string({ unit: "binary" }),
  fc.string({
    unit: fc.constantFrom(
      "\u001b",
      "[",
      "]",
      "\u0007",
      "\r",
      "\n",
      "\t",
      "\u009b",
      "\u009d",
      "\u007f",
      "\u202e",
      "\u2066",
      "\u200b",
      "\u2028",
      "\u{e0041}",
      "\ud800",
      "\\",
      "x",
      "u",
      "{",
      "}",
      "1",
      "b",
      "a",
      "✓",
    ),
  }),
);

describe("escapeForTerminal", () => {
  it.each([
    ["ESC sequences (CSI, erase line, cursor moves)", "ok\u001b[2K\u001b[1A", "ok\\x1b[2K\\x1b[1A"],
    ["OSC window title ended by BEL", "\u001b]0;pwned\u0007", "\\x1b]0;pwned\\x07"],
    ["OSC 8 hyperlink ended by ST", "\u001b]8;;http://evil\u001b\\x", "\\x1b]8;;http://evil\\x1b\\x"],
    ["carriage return (hides the start of a line)", "rm -rf /\rls", "rm -rf /\\x0dls"],
    ["newline and tab", "a\nb\tc", "a\\x0ab\\x09c"],
    ["NUL, backspace, form feed", "\u0000\b\f", "\\x00\\x08\\x0c"],
    ["DEL and C1 controls, the one-byte CSI included", "\u007f\u0085\u009b31m", "\\x7f\\x85\\x9b31m"],
    [
      "bidi overrides and embeddings",
      "a\u202ab\u202bc\u202cd\u202de\u202ef",
      "a\\u202ab\\u202bc\\u202cd\\u202de\\u202ef",
    ],
    ["bidi isolates", "\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"],
    ["bidi marks", "\u200e\u200f\u061c", "\\u200e\\u200f\\u061c"],
    [
      "zero-width characters",
      "r\u200bm\u200c \u200d-\u2060rf\ufeff",
      "r\\u200bm\\u200c \\u200d-\\u2060rf\\ufeff",
    ],
    ["line and paragraph separators", "a\u2028b\u2029c", "a\\u2028b\\u2029c"],
    ["tag characters (invisible ASCII)", "hi\u{e0069}\u{e0067}", "hi\\u{e0069}\\u{e0067}"],
    ["soft hyphen and Hangul filler", "a\u00adb\u3164c", "a\\xadb\\u3164c"],
    ["lone surrogates", "\ud800x\udc00", "\\ud800x\\udc00"],
  ])("shows %s", (_name, input, shown) => {
    expect(escapeForTerminal(input)).toBe(shown);
    expect(reveal(shown)).toBe(input);
  });

  it("leaves ordinary text, Unicode and backslashes alone", () => {
    for (const text of [
      "hello, harness",
      "naïve café ✓ 漢字 🙂",
      "C:\\temp\\new",
      'printf("\\n")',
      "a\\\\b",
    ]) {
      expect(escapeForTerminal(text)).toBe(text);
    }
  });

  it("doubles a backslash only where it would read as an escape", () => {
    expect(escapeForTerminal("\\x1b")).toBe("\\\\x1b");
    expect(escapeForTerminal("\\u202e")).toBe("\\\\u202e");
    expect(escapeForTerminal("\\u{e0041}")).toBe("\\\\u{e0041}");
    expect(escapeForTerminal("\\\u001b")).toBe("\\\\\\x1b");
    expect(escapeForTerminal("\\xyz")).toBe("\\xyz");
    // The literal text "\x1b" and a real ESC never look the same.
    expect(escapeForTerminal("\\x1b")).not.toBe(escapeForTerminal("\u001b"));
  });

  it("never lets a terminal control, bidi control or invisible character through (property)", () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const shown = escapeForTerminal(text);
        expect(shown).not.toMatch(FORBIDDEN);
        expect(shown).not.toContain("\n");
        expect(shown).not.toMatch(LONE_SURROGATE);
      }),
      { numRuns: 2000 },
    );
  });

  it("is reversible: the shown text tells exactly what the original was (property)", () => {
    fc.assert(
      fc.property(hostile, (text) => {
        expect(reveal(escapeForTerminal(text))).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });

  it("is injective (property)", () => {
    fc.assert(
      fc.property(hostile, hostile, (a, b) => {
        fc.pre(a !== b);
        expect(escapeForTerminal(a)).not.toBe(escapeForTerminal(b));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("escapeLines", () => {
  it("splits at newlines only and escapes everything else in each line", () => {
    expect(escapeLines("one\r\ntwo\u001b[2K\n\u2028three\n")).toEqual([
      "one\\x0d",
      "two\\x1b[2K",
      "\\u2028three",
    ]);
    expect(escapeLines("")).toEqual([""]);
    expect(escapeLines("a\n\nb")).toEqual(["a", "", "b"]);
  });

  it("gives lines that hold no control of any kind, and that join back into the original (property)", () => {
    fc.assert(
      fc.property(hostile, (text) => {
        const lines = escapeLines(text);
        for (const line of lines) {
          expect(line).not.toMatch(FORBIDDEN);
          expect(line).not.toContain("\n");
        }
        const joined = lines.map(reveal).join("\n");
        expect(joined === text || `${joined}\n` === text).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("jsonForTerminal", () => {
  it("writes what JSON leaves raw (DEL, C1, bidi, invisible, separators) as JSON escapes", () => {
    const value = { command: "a\u001b[2J\u007f\u009b\u202e\u200b\u2028\u{e0041}\\x1b", n: 1 };
    const shown = jsonForTerminal(value);
    expect(shown).toBe(
      '{"command":"a\\u001b[2J\\u007f\\u009b\\u202e\\u200b\\u2028\\udb40\\udc41\\\\x1b","n":1}',
    );
  });

  it("keeps the indentation's newlines and nothing else a terminal obeys", () => {
    const shown = jsonForTerminal({ a: "x\ny\rz" }, 2);
    expect(shown).toBe('{\n  "a": "x\\ny\\rz"\n}');
  });

  it("is exact JSON for the same value (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), hostile, (value, text) => {
        for (const v of [value, { text, value }]) {
          const shown = jsonForTerminal(v, 2);
          expect(shown.replaceAll("\n", "")).not.toMatch(FORBIDDEN);
          expect(shown).not.toMatch(LONE_SURROGATE);
          expect(JSON.parse(shown)).toEqual(JSON.parse(JSON.stringify(v)));
        }
      }),
      { numRuns: 1000 },
    );
  });
});
