import { splitLines } from "../shared/split-lines.js";
import { escapeForTerminal } from "../shared/terminal-text.js";
import { MODEL_PREFIX } from "./lines.js";
import type { ChatLine, UiStyle } from "./ui.js";

/**
 * What `harness run` and `harness chat` show of a finished call besides its status line: the diff
 * of each file it changed, and a command's output (its first and last lines, the middle elided).
 * One home for both, so the two agree. Everything shown is outside text (file contents, output),
 * so each line is escaped and set under the model-text prefix, which harness's own lines never
 * start with; only the elision notes and stream labels are harness's words.
 */

/** Lines of a command's output shown from its start and from its end; the middle is elided. */
export const SHOWN_HEAD_LINES = 8;
export const SHOWN_TAIL_LINES = 8;
/** Lines of one file's diff shown; a longer diff is cut with a note. */
export const SHOWN_DIFF_LINES = 80;
/** A longer line is cut: this is a glance, `harness inspect --call` has the whole output. */
const LINE_CHARS = 240;
const INDENT = "  ";

/** One stream of a command's result as its `data` records it (tools/shell/render.ts `streamData`). */
export interface StreamView {
  bytes: number;
  head: string;
  tail: string;
  truncated: boolean;
  omitted_bytes: number;
}

/** A shell result's streams, read from its (journaled, so `unknown` here) data; undefined when it has none. */
export function commandStreams(data: unknown): { stdout?: StreamView; stderr?: StreamView } | undefined {
  if (typeof data !== "object" || data === null) return undefined;
  const record = data as Record<string, unknown>;
  const stdout = streamOf(record.stdout);
  const stderr = streamOf(record.stderr);
  if (stdout === undefined && stderr === undefined) return undefined;
  return { ...(stdout ? { stdout } : {}), ...(stderr ? { stderr } : {}) };
}

function streamOf(value: unknown): StreamView | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const s = value as Record<string, unknown>;
  if (typeof s.bytes !== "number" || typeof s.head !== "string" || typeof s.tail !== "string")
    return undefined;
  return {
    bytes: s.bytes,
    head: s.head,
    tail: s.tail,
    truncated: s.truncated === true,
    omitted_bytes: typeof s.omitted_bytes === "number" ? s.omitted_bytes : 0,
  };
}

/**
 * A finished command's output: each non-empty stream under a label, its first and last lines with
 * the middle elided. `more` names the command that shows all of it (`harness inspect ... --call`).
 */
export function commandOutputLines(
  style: UiStyle,
  streams: { stdout?: StreamView; stderr?: StreamView },
  more: string,
): ChatLine[] {
  const lines: ChatLine[] = [];
  for (const name of ["stdout", "stderr"] as const) {
    const stream = streams[name];
    if (stream === undefined || stream.bytes === 0) continue;
    lines.push({ text: `${INDENT}${style.dim(`${name}:`)}` });
    lines.push(...streamLines(style, stream, more));
  }
  return lines;
}

function streamLines(style: UiStyle, stream: StreamView, more: string): ChatLine[] {
  if (!stream.truncated) return boundedText(style, stream.head, more);
  // The stored preview is already the start and the end: the middle was never kept in the result.
  const head = splitLines(stream.head).slice(0, SHOWN_HEAD_LINES);
  const tail = splitLines(stream.tail).slice(-SHOWN_TAIL_LINES);
  return [
    ...head.map((line) => quotedLine(style, line)),
    elision(style, `${stream.omitted_bytes} bytes not shown (all of it: ${more})`),
    ...tail.map((line) => quotedLine(style, line)),
  ];
}

/**
 * Text from outside (an acceptance command's output, a stream), its first and last lines shown
 * and the middle elided.
 */
export function boundedText(style: UiStyle, text: string, more?: string): ChatLine[] {
  const lines = splitLines(text);
  if (lines.length <= SHOWN_HEAD_LINES + SHOWN_TAIL_LINES + 1) return lines.map((l) => quotedLine(style, l));
  const elided = lines.length - SHOWN_HEAD_LINES - SHOWN_TAIL_LINES;
  return [
    ...lines.slice(0, SHOWN_HEAD_LINES).map((line) => quotedLine(style, line)),
    elision(style, `${elided} lines not shown${more === undefined ? "" : ` (all of them: ${more})`}`),
    ...lines.slice(-SHOWN_TAIL_LINES).map((line) => quotedLine(style, line)),
  ];
}

/** A failed acceptance check's output (scrubbed of secrets and host paths when it was recorded), bounded. */
export function checkOutputLines(style: UiStyle, output: string | undefined): ChatLine[] {
  return output === undefined || output.trim() === "" ? [] : boundedText(style, output);
}

/** A file's change as the run shows it: its unified diff, coloured, cut after SHOWN_DIFF_LINES lines. */
export function diffLines(style: UiStyle, diff: string): ChatLine[] {
  const lines = splitLines(diff);
  const shown = lines.slice(0, SHOWN_DIFF_LINES).map((line) => {
    const text = escapeForTerminal(clip(line));
    const colour =
      line.startsWith("+++") || line.startsWith("---")
        ? style.bold
        : line.startsWith("@@")
          ? style.cyan
          : line.startsWith("+")
            ? style.green
            : line.startsWith("-")
              ? style.red
              : (t: string) => t;
    return { text: `${INDENT}${style.dim(MODEL_PREFIX)}${colour(text)}` };
  });
  if (lines.length > SHOWN_DIFF_LINES)
    shown.push(elision(style, `${lines.length - SHOWN_DIFF_LINES} more lines of this diff not shown`));
  return shown;
}

/** A change that has no text diff to show (a binary or large file, a link, a deletion): one line. */
export function changeNote(style: UiStyle, path: string, what: string): ChatLine {
  return { text: `${INDENT}${style.dim(`${escapeForTerminal(what)}: `)}${escapeForTerminal(path)}` };
}

/** One line of output; a CRLF line ending is a line ending, not a character to show. */
function quotedLine(style: UiStyle, line: string): ChatLine {
  return { text: `${INDENT}${style.dim(MODEL_PREFIX)}${escapeForTerminal(clip(line.replace(/\r$/, "")))}` };
}

function elision(style: UiStyle, text: string): ChatLine {
  return { text: `${INDENT}${style.dim(`${MODEL_PREFIX.trimEnd()} … ${escapeForTerminal(text)}`)}` };
}

function clip(line: string): string {
  return line.length > LINE_CHARS ? `${line.slice(0, LINE_CHARS - 1)}…` : line;
}
