import { structuredPatch } from "diff";

/**
 * The one diff of harness: the unified diff (`diff -u` / `git diff` text) of two versions of a
 * file, computed by jsdiff. Every place that shows a change (the approval prompt, a tool's result,
 * proposals, the chat, `harness report` and the viewer) gets its text from here, so they never
 * disagree about what a change was. It is a preview, never re-parsed: `harness apply` and undo
 * write whole contents.
 *
 * Lines are compared with their terminators, so a changed line ending (CRLF vs LF) or a missing
 * final newline shows as a change (marked `\ No newline at end of file`, as diff and git do).
 * Hunk ranges are written as git writes them (`-3` for one line, `-0,0` for an empty side).
 * The text is not escaped: a terminal caller escapes it (shared/terminal-text.ts), a page inserts
 * it with textContent.
 */

/** Unchanged lines shown around each change. */
export const DIFF_CONTEXT_LINES = 3;

/**
 * Above this many edit steps the minimal diff is not searched for any further and the file is
 * shown as replaced whole (still a correct diff): bounds time and memory on large rewrites.
 */
const MAX_EDIT_LENGTH = 2000;

/**
 * The most of a diff a tool result records (`data.diff`): the journal holds what every surface
 * shows, so a huge rewrite is shown cut, the same way everywhere.
 */
export const RECORDED_DIFF_BYTES = 64 * 1024;

/** A text side bigger than this is not diffed line by line (a summary line says so). */
export const MAX_DIFF_BYTES = 4 * 1024 * 1024;

const NO_NEWLINE = "\\ No newline at end of file";

/**
 * The unified diff turning `before` into `after` for `path`; `null` means the file does not
 * exist on that side (`/dev/null`: a new or a deleted file). "" when nothing changed.
 */
export function unifiedDiff(path: string, before: string | null, after: string | null): string {
  if (before === after) return "";
  const oldText = before ?? "";
  const newText = after ?? "";
  const header = [
    before === null ? "--- /dev/null" : `--- a/${path}`,
    after === null ? "+++ /dev/null" : `+++ b/${path}`,
  ];
  if (oldText === newText) return `${header.join("\n")}\n`;
  const hunks = textHunks(oldText, newText);
  const body = hunks.flatMap((hunk) => [
    `@@ -${range(hunk.oldStart, hunk.oldLines)} +${range(hunk.newStart, hunk.newLines)} @@`,
    ...hunk.lines,
  ]);
  return `${[...header, ...body].join("\n")}\n`;
}

/** One side of a file as bytes: absent, its bytes, or known only by its size (too big to read). */
export type FileSide = null | Uint8Array | { size: number };

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The diff of a file given as bytes: text sides go through `unifiedDiff`; a side that is not
 * UTF-8 text (or holds a NUL byte) is `Binary files A and B differ`, as git says it; a side too
 * big to diff is one line with both sizes.
 */
export function fileDiff(path: string, before: FileSide, after: FileSide): string {
  const oldName = before === null ? "/dev/null" : `a/${path}`;
  const newName = after === null ? "/dev/null" : `b/${path}`;
  if (tooBig(before) || tooBig(after)) {
    if (sameBytes(before, after)) return "";
    return `Files ${oldName} and ${newName} differ (${sizeOf(before)} → ${sizeOf(after)} bytes, too large to show)\n`;
  }
  const oldText = asText(before as Uint8Array | null);
  const newText = asText(after as Uint8Array | null);
  if (oldText === undefined || newText === undefined) {
    if (sameBytes(before, after)) return "";
    return `Binary files ${oldName} and ${newName} differ\n`;
  }
  return unifiedDiff(path, oldText, newText);
}

/** Git's text test, plus strict UTF-8: a NUL byte or an invalid sequence makes a side binary. */
function asText(bytes: Uint8Array | null): string | null | undefined {
  if (bytes === null) return null;
  if (bytes.includes(0)) return undefined;
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}

function tooBig(side: FileSide): boolean {
  if (side === null) return false;
  return side instanceof Uint8Array ? side.byteLength > MAX_DIFF_BYTES : true;
}

function sizeOf(side: FileSide): number {
  if (side === null) return 0;
  return side instanceof Uint8Array ? side.byteLength : side.size;
}

function sameBytes(a: FileSide, b: FileSide): boolean {
  if (!(a instanceof Uint8Array) || !(b instanceof Uint8Array)) return false;
  return a.byteLength === b.byteLength && a.every((byte, i) => byte === b[i]);
}

interface Hunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: string[];
}

function textHunks(oldText: string, newText: string): Hunk[] {
  // jsdiff gives up past maxEditLength (undefined); then the file is shown replaced whole.
  const exact = structuredPatch("a", "b", oldText, newText, undefined, undefined, {
    context: DIFF_CONTEXT_LINES,
    maxEditLength: MAX_EDIT_LENGTH,
  });
  if (exact !== undefined) return exact.hunks;
  const oldLines = splitKeepingEnds(oldText);
  const newLines = splitKeepingEnds(newText);
  return [
    {
      oldStart: oldLines.length === 0 ? 0 : 1,
      oldLines: oldLines.length,
      newStart: newLines.length === 0 ? 0 : 1,
      newLines: newLines.length,
      lines: [...marked("-", oldLines), ...marked("+", newLines)],
    },
  ];
}

function marked(sign: "-" | "+", lines: readonly string[]): string[] {
  return lines.flatMap((line) =>
    line.endsWith("\n") ? [`${sign}${line.slice(0, -1)}`] : [`${sign}${line}`, NO_NEWLINE],
  );
}

/** Lines with their terminating "\n" kept; a final line without one is kept as it is. */
export function splitKeepingEnds(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", start)) {
    lines.push(text.slice(start, i + 1));
    start = i + 1;
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/**
 * `start,count` as git writes it. jsdiff's start of an empty side is one past the line before
 * it; git names that line (0 for the start of the file), and leaves out a count of one.
 */
function range(start: number, count: number): string {
  if (count === 0) return `${Math.max(0, start - 1)},0`;
  if (count === 1) return `${start}`;
  return `${start},${count}`;
}

/**
 * A diff cut to whole lines within `maxBytes` (UTF-8), ending with a line that says how much is
 * not shown (it starts with neither ' ', '+', '-' nor '@', so it never reads as part of a hunk).
 */
export function clipDiff(diff: string, maxBytes: number): string {
  const total = utf8.encode(diff).byteLength;
  if (total <= maxBytes) return diff;
  let kept = "";
  let keptBytes = 0;
  let lines = 0;
  for (const line of splitKeepingEnds(diff)) {
    const bytes = utf8.encode(line).byteLength;
    if (keptBytes + bytes > maxBytes) break;
    kept += line;
    keptBytes += bytes;
    lines += 1;
  }
  const all = splitKeepingEnds(diff).length;
  return `${kept}… ${all - lines} more diff lines not shown (${total - keptBytes} bytes)\n`;
}

const utf8 = new TextEncoder();
