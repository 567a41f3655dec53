import { eastAsianWidth } from "get-east-asian-width";

/**
 * How many terminal columns text takes: the one width function of harness, used wherever a table
 * is padded or a line is cut to the terminal (cli/fit.ts, the CLI's tables, the chat's lines).
 *
 * Text is measured by grapheme cluster (Intl.Segmenter), so a letter with combining marks, a flag
 * or a ZWJ family is one unit; a cluster is 2 columns when it is an emoji (RGI_Emoji, a regional
 * indicator) or East Asian Wide/Fullwidth (get-east-asian-width: CJK, Hangul, fullwidth forms),
 * 0 when it holds only marks, controls or invisible characters, otherwise 1. Ambiguous-width
 * characters count as narrow, as terminals outside CJK locales draw them. This is what the chat's
 * own renderer (pi-tui) assumes too, so harness's tables and the chat agree on a line's width.
 * Colour codes (SGR) take no columns.
 */

/**
 * The segmenter and the emoji pattern are built on first use, not when the module loads: together
 * they cost 50-150 ms (ICU data, a large Unicode property set), and most commands only ever
 * measure plain ASCII, which needs neither.
 */
let segmenterMemo: Intl.Segmenter | undefined;
function graphemes(text: string): Intl.Segments {
  segmenterMemo ??= new Intl.Segmenter(undefined, { granularity: "grapheme" });
  return segmenterMemo.segment(text);
}
let rgiEmojiMemo: RegExp | undefined;
function isRgiEmoji(cluster: string): boolean {
  /** Built at run time: the `v` flag (for RGI_Emoji) is newer than the TypeScript target. */
  // biome-ignore lint/complexity/useRegexLiterals: TypeScript refuses the `v` flag in a literal for an ES2022 target
  rgiEmojiMemo ??= new RegExp("^\\p{RGI_Emoji}$", "v");
  return rgiEmojiMemo.test(cluster);
}
const ZERO_WIDTH = /^[\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\p{Mn}\p{Me}\p{Cs}]+$/u;
const LEADING_INVISIBLE = /^[\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\p{Mn}\p{Me}\p{Cs}]+/u;
const SGR = /\u001b\[[0-9;]*m/g;
const SGR_AT = /\u001b\[[0-9;]*m/y;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const RESET = "\u001b[0m";

/** Columns one grapheme cluster takes. */
export function clusterWidth(cluster: string): number {
  if (ZERO_WIDTH.test(cluster)) return 0;
  const code = cluster.codePointAt(0) ?? 0;
  if (code < 0x7f) return 1;
  if (isRgiEmoji(cluster)) return 2;
  // A lone regional indicator is drawn as a wide letter by most terminals.
  if (code >= 0x1f1e6 && code <= 0x1f1ff) return 2;
  const base = cluster.replace(LEADING_INVISIBLE, "").codePointAt(0);
  if (base === undefined) return 0;
  // An emoji-presentation selector makes a text-default symbol (☺, ✈) an emoji.
  if (cluster.includes("\ufe0f")) return 2;
  return eastAsianWidth(base, { ambiguousAsWide: false });
}

/** Columns `text` takes on a terminal (colour codes not counted). */
export function displayWidth(text: string): number {
  if (PRINTABLE_ASCII.test(text)) return text.length;
  let width = 0;
  for (const { segment } of graphemes(text.replace(SGR, ""))) width += clusterWidth(segment);
  return width;
}

/** `text` padded with spaces on the right to `width` columns (never cut). */
export function padEndWidth(text: string, width: number): string {
  return text + " ".repeat(Math.max(0, width - displayWidth(text)));
}

/** `text` padded with spaces on the left to `width` columns (never cut). */
export function padStartWidth(text: string, width: number): string {
  return " ".repeat(Math.max(0, width - displayWidth(text))) + text;
}

/**
 * `text` cut to at most `width` columns, the last one an ellipsis, whole clusters only (a wide
 * character that would straddle the edge is left out); colour codes are kept and, once cut,
 * closed with a reset. Text that fits is returned as it is.
 */
export function truncateToWidth(text: string, width: number, ellipsis = "…"): string {
  if (displayWidth(text) <= width) return text;
  const room = width - displayWidth(ellipsis);
  if (room < 0) return "";
  let out = "";
  let shown = 0;
  let coloured = false;
  let index = 0;
  while (index < text.length) {
    SGR_AT.lastIndex = index;
    const code = SGR_AT.exec(text);
    if (code) {
      out += code[0];
      coloured = true;
      index = SGR_AT.lastIndex;
      continue;
    }
    const next = text.indexOf("\u001b", index + 1);
    const run = text.slice(index, next === -1 ? text.length : next);
    let stopped = false;
    for (const { segment } of graphemes(run)) {
      const w = clusterWidth(segment);
      if (shown + w > room) {
        stopped = true;
        break;
      }
      out += segment;
      shown += w;
    }
    if (stopped) break;
    index += run.length;
  }
  return `${out}${ellipsis}${coloured ? RESET : ""}`;
}
