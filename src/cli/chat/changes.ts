import { unifiedDiff } from "../../proposals/diff.js";
import { splitLines } from "../../shared/split-lines.js";
import { escapeLines } from "../../shared/terminal-text.js";
import { note, own } from "../../ui/lines.js";
import type { ChatLine, UiStyle } from "../../ui/ui.js";
import { type ContentSources, type PathChange, recordedContent } from "../../undo/history.js";
import { type Entry, isDir, isFile, isLink } from "../../workspace/manifest.js";

/**
 * Recorded changes as a person reads them in the chat: each file's diff in the `git diff` form
 * (made by proposals/diff.ts `unifiedDiff`, the one diff harness shows), and its added and removed
 * line counts for /undo's picker. Bytes come from the record (`undo/history.ts`), never from a
 * guess: a content the record did not keep is said to be unknown.
 */

/** Files larger than this are not diffed (their change is still listed). */
const DIFF_LIMIT = 1024 * 1024;

/** One path's change, ready to show. */
export interface FileDiff {
  path: string;
  /** What happened to it, in words (`new`, `deleted`, `binary`, `content not kept`...), when not a plain text change. */
  kind?: string;
  added: number;
  removed: number;
  /** The `diff --git` block (header, hunks), raw: escaped where it is shown. Absent when there is no text to diff. */
  text?: string;
}

/** A recorded change of one path as a diff: its text from the recorded bytes, and the line counts. */
export async function fileDiff(sources: ContentSources, change: PathChange): Promise<FileDiff> {
  const { path, before, after } = change;
  const head = [`diff --git a/${path} b/${path}`];
  const kindOf = (entry: Entry | null) =>
    entry === null
      ? "absent"
      : isFile(entry)
        ? "file"
        : isLink(entry)
          ? "link"
          : isDir(entry)
            ? "dir"
            : "other";
  const was = kindOf(before);
  const is = kindOf(after);
  if (was === "dir" || is === "dir")
    return {
      path,
      kind: is === "dir" ? (was === "absent" ? "new directory" : "now a directory") : "directory removed",
      added: 0,
      removed: 0,
    };
  if (was === "link" || is === "link") {
    const target = (entry: Entry | null) =>
      entry !== null && isLink(entry) ? `symlink to ${entry.link}` : kindOf(entry);
    return { path, kind: `${target(before)} -> ${target(after)}`, added: 0, removed: 0 };
  }
  if (was === "other" || is === "other")
    return { path, kind: "held by kind or size only: no content recorded", added: 0, removed: 0 };
  const [old, now] = await Promise.all([content(sources, path, before), content(sources, path, after)]);
  if (typeof old === "object" && typeof now === "object") {
    return textDiff(path, head, before, after, old.text, now.text);
  }
  const why = [old, now].find((side): side is Unreadable => typeof side === "string");
  if (why === "binary")
    return {
      path,
      kind: "binary",
      added: 0,
      removed: 0,
      text: [
        ...head,
        `Binary files ${before === null ? "/dev/null" : `a/${path}`} and ${after === null ? "/dev/null" : `b/${path}`} differ`,
      ].join("\n"),
    };
  return {
    path,
    kind: why === "large" ? "too large to diff" : "content not kept: no diff",
    added: 0,
    removed: 0,
  };
}

function textDiff(
  path: string,
  head: string[],
  before: Entry | null,
  after: Entry | null,
  old: string | null,
  now: string | null,
): FileDiff {
  if (before === null) head.push(`new file mode ${modeOf(after)}`);
  else if (after === null) head.push(`deleted file mode ${modeOf(before)}`);
  else if (modeOf(before) !== modeOf(after))
    head.push(`old mode ${modeOf(before)}`, `new mode ${modeOf(after)}`);
  let body = unifiedDiff(path, old, now ?? "");
  // unifiedDiff takes no deleted side: a deletion is the diff to nothing, headed as git heads it.
  if (after === null) body = body.replace(`+++ b/${path}\n`, "+++ /dev/null\n");
  const lines = splitLines(body);
  let added = 0;
  let removed = 0;
  let hunks = false;
  for (const line of lines) {
    // Before the first hunk: the header (whose ---/+++ lines are no content).
    if (line.startsWith("@@")) hunks = true;
    else if (hunks && line.startsWith("+")) added++;
    else if (hunks && line.startsWith("-")) removed++;
  }
  return {
    path,
    ...(before === null ? { kind: "new" } : after === null ? { kind: "deleted" } : {}),
    added,
    removed,
    text: [...head, ...lines].join("\n"),
  };
}

/** A change in a few words: `hello.txt +1 -1`, `new.txt (new) +3`. */
export function changeBrief(diff: FileDiff): string {
  const counts = diff.text === undefined || diff.kind === "binary" ? "" : ` +${diff.added} -${diff.removed}`;
  return `${diff.path}${diff.kind !== undefined ? ` (${diff.kind})` : ""}${counts}`;
}

/** A diff block as chat lines: every line escaped, then coloured as git colours it. */
export function diffLines(style: UiStyle, diff: FileDiff): ChatLine[] {
  if (diff.text === undefined) return [note(style, "dim", diff.path, ": ", diff.kind ?? "changed")];
  let hunks = false;
  return escapeLines(diff.text).map((line): ChatLine => {
    if (line.startsWith("@@")) hunks = true;
    if (!hunks) return { text: style.bold(line) };
    if (line.startsWith("+")) return { text: style.green(line) };
    if (line.startsWith("-")) return { text: style.red(line) };
    if (line.startsWith("@@")) return { text: style.cyan(line) };
    return { text: line };
  });
}

/** The totals line of a set of diffs: `2 files changed, +3 -1`. */
export function totalsLine(style: UiStyle, diffs: readonly FileDiff[], where: string): ChatLine {
  const added = diffs.reduce((n, d) => n + d.added, 0);
  const removed = diffs.reduce((n, d) => n + d.removed, 0);
  const files = diffs.length === 1 ? "1 file changed" : `${diffs.length} files changed`;
  return own(style, "plain", `${where}: ${files}, +${added} -${removed}`);
}

/** Why a side of a change cannot be diffed as text. */
type Unreadable = "unknown" | "binary" | "large";

/** A side's text (null: absent), or why there is none to diff. */
async function content(
  sources: ContentSources,
  path: string,
  entry: Entry | null,
): Promise<{ text: string | null } | Unreadable> {
  if (entry === null) return { text: null };
  if (isFile(entry) && entry.size > DIFF_LIMIT) return "large";
  const bytes = await recordedContent(sources, path, entry);
  if (bytes === undefined) return "unknown";
  if (bytes.includes(0)) return "binary";
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    return "binary";
  }
}

function modeOf(entry: Entry | null): string {
  return entry !== null && isFile(entry) && entry.exec ? "100755" : "100644";
}
