/**
 * The one way text that harness did not write itself reaches a terminal: model text and reasoning,
 * call ids, tool names, arguments, tool output, file names, diff lines, error messages that quote
 * any of these, and anything read back from a journal (which a repository may have shipped).
 *
 * Every character a terminal obeys or that hides text is replaced by a visible escape, so such
 * text can neither drive the terminal (move the cursor, erase or overwrite a line, set the window
 * title, emit a hyperlink) nor look like something it is not:
 *
 * - C0 controls (tab and carriage return included; a newline only where the caller lays out
 *   lines itself), DEL and C1 controls (U+009B is a one-byte CSI): `\x1b`, `\x0d`, `\x9b`;
 * - format characters, among them the bidirectional embeddings, overrides, isolates and marks
 *   (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) and zero-width characters: `\u202e`;
 * - every other default-ignorable (invisible) code point, e.g. variation selectors, Hangul
 *   fillers and tag characters (`\u{e0041}`), line and paragraph separators, lone surrogates.
 *
 * Escapes name the code point in lowercase hex: `\xHH` up to U+00FF, `\uHHHH` in the BMP,
 * `\u{H...}` above. A backslash run in the original is doubled only where it would otherwise read
 * as one of these escapes, so ordinary text (`C:\temp`, `"\n"` in code) is shown unchanged while
 * the mapping stays reversible: the visible text always tells what the original was.
 *
 * Harness's own styling (style.ts) is applied to the result, after escaping.
 */

const HIDDEN_CLASS = String.raw`\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}`;

/** A run of backslashes, or one code point that must never reach the terminal as itself. */
const SPECIAL = new RegExp(String.raw`(\\+)|[${HIDDEN_CLASS}]`, "gu");

/** Whether the text at a position starts with a code point that will be escaped. */
const HIDDEN_AT = new RegExp(`[${HIDDEN_CLASS}]`, "uy");

/** Every code point to escape, anywhere in a text. */
const HIDDEN_ALL = new RegExp(`[${HIDDEN_CLASS}]`, "gu");

/** What a shown escape looks like right after its backslash. */
const ESCAPE_BODY_AT = /x[0-9a-f]{2}|u[0-9a-f]{4}|u\{[0-9a-f]{1,6}\}/y;

/** Text for one line: a newline is shown as `\x0a`, never obeyed. */
export function escapeForTerminal(text: string): string {
  return escapeText(text, false);
}

/**
 * Text that may span lines, split at its newlines into escaped lines for the caller to lay out
 * (each line carries no newline and nothing else a terminal obeys). A final newline ends the last
 * line rather than starting an empty one.
 */
export function escapeLines(text: string): string[] {
  const lines = escapeText(text, true).split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/**
 * A value as JSON text that is safe on a terminal: JSON.stringify, with every character the
 * escaper would show written as a JSON `\uXXXX` escape instead (JSON leaves DEL, C1 controls,
 * bidi and invisible characters raw). The result is still exact JSON for the same value, and
 * since JSON doubles every literal backslash, its escapes cannot be confused with text.
 */
export function jsonForTerminal(value: unknown, indent?: number): string {
  const json = JSON.stringify(value, null, indent) ?? "null";
  return json.replace(HIDDEN_ALL, (char) => {
    // JSON keeps newlines in strings escaped: a raw one is the indentation's own layout.
    if (char === "\n") return char;
    let out = "";
    for (let i = 0; i < char.length; i += 1) out += `\\u${char.charCodeAt(i).toString(16).padStart(4, "0")}`;
    return out;
  });
}

function escapeText(text: string, keepNewlines: boolean): string {
  const hiddenAt = (at: number) => {
    if (keepNewlines && text[at] === "\n") return false;
    HIDDEN_AT.lastIndex = at;
    return HIDDEN_AT.test(text);
  };
  return text.replace(SPECIAL, (match: string, run: string | undefined, offset: number) => {
    if (run !== undefined) {
      // Doubled only when what follows would otherwise be read together with it as an escape.
      const next = offset + run.length;
      ESCAPE_BODY_AT.lastIndex = next;
      return hiddenAt(next) || ESCAPE_BODY_AT.test(text) ? run + run : run;
    }
    if (keepNewlines && match === "\n") return match;
    return escapeCodePoint(match.codePointAt(0)!);
  });
}

function escapeCodePoint(code: number): string {
  const hex = code.toString(16);
  if (code <= 0xff) return `\\x${hex.padStart(2, "0")}`;
  if (code <= 0xffff) return `\\u${hex.padStart(4, "0")}`;
  return `\\u{${hex}}`;
}
