/**
 * A unified diff (the `diff -u` / `git diff` text format) of two versions of one text file,
 * for showing a proposal to a reviewer and to the model. It is a preview, not the thing that is
 * applied: `harness apply` writes the proposal's full content, so the diff only has to be
 * correct and readable, never re-parsed.
 *
 * Lines are compared with their line terminators, so a changed line ending or a missing final
 * newline shows as a change (marked `\ No newline at end of file`, as diff and git do).
 */

/** Unchanged lines shown around each change. */
export const DIFF_CONTEXT_LINES = 3;

/**
 * Above this many edit steps in the changed middle of a file, the minimal diff is not searched
 * for any further and the middle is shown as one replacement (still a correct diff). Bounds
 * time and memory on large rewrites.
 */
const MAX_EDIT_DISTANCE = 2000;

type Op = { kind: " " | "-" | "+"; line: string };

/**
 * The unified diff turning `before` into `after` for `path`; `before === null` means the file
 * does not exist yet (`--- /dev/null`). Returns "" when the texts are equal.
 */
export function unifiedDiff(path: string, before: string | null, after: string): string {
  const oldLines = splitKeepingEnds(before ?? "");
  const newLines = splitKeepingEnds(after);
  if (before !== null && before === after) return "";
  const ops = diffLines(oldLines, newLines);
  const header = [before === null ? "--- /dev/null" : `--- a/${path}`, `+++ b/${path}`];
  return `${[...header, ...renderHunks(ops)].join("\n")}\n`;
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

/** The edit script between two line lists: common prefix and suffix, then Myers in between. */
function diffLines(a: readonly string[], b: readonly string[]): Op[] {
  let prefix = 0;
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++;
  let suffix = 0;
  while (
    suffix < a.length - prefix &&
    suffix < b.length - prefix &&
    a[a.length - 1 - suffix] === b[b.length - 1 - suffix]
  ) {
    suffix++;
  }
  const middleA = a.slice(prefix, a.length - suffix);
  const middleB = b.slice(prefix, b.length - suffix);
  return [
    ...a.slice(0, prefix).map((line): Op => ({ kind: " ", line })),
    ...(myers(middleA, middleB) ?? replaceAll(middleA, middleB)),
    ...a.slice(a.length - suffix).map((line): Op => ({ kind: " ", line })),
  ];
}

function replaceAll(a: readonly string[], b: readonly string[]): Op[] {
  return [...a.map((line): Op => ({ kind: "-", line })), ...b.map((line): Op => ({ kind: "+", line }))];
}

/**
 * Myers' O((N+M)D) shortest edit script, or undefined when it needs more than
 * MAX_EDIT_DISTANCE steps. Deletions come before insertions within a change, as in diff -u.
 */
function myers(a: readonly string[], b: readonly string[]): Op[] | undefined {
  const n = a.length;
  const m = b.length;
  if (n === 0 || m === 0) return replaceAll(a, b);
  const max = Math.min(n + m, MAX_EDIT_DISTANCE);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[offset + k - 1] as number) < (v[offset + k + 1] as number));
      let x = down ? (v[offset + k + 1] as number) : (v[offset + k - 1] as number) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, a, b, offset, d);
    }
  }
  return undefined;
}

function backtrack(
  trace: Int32Array[],
  a: readonly string[],
  b: readonly string[],
  offset: number,
  last: number,
) {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = last; d > 0; d--) {
    const v = trace[d] as Int32Array;
    const k = x - y;
    const down = k === -d || (k !== d && (v[offset + k - 1] as number) < (v[offset + k + 1] as number));
    const prevK = down ? k + 1 : k - 1;
    const prevX = v[offset + prevK] as number;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      ops.push({ kind: " ", line: a[x] as string });
    }
    if (down) ops.push({ kind: "+", line: b[--y] as string });
    else ops.push({ kind: "-", line: a[--x] as string });
  }
  while (x > 0 && y > 0) {
    x--;
    y--;
    ops.push({ kind: " ", line: a[x] as string });
  }
  return ops.reverse();
}

/** Group the script into hunks with DIFF_CONTEXT_LINES of context, `diff -u` style. */
function renderHunks(ops: readonly Op[]): string[] {
  const changed: number[] = [];
  ops.forEach((op, i) => {
    if (op.kind !== " ") changed.push(i);
  });
  const out: string[] = [];
  let i = 0;
  while (i < changed.length) {
    let last = changed[i] as number;
    let j = i + 1;
    // Changes separated by at most twice the context share a hunk.
    while (j < changed.length && (changed[j] as number) - last <= 2 * DIFF_CONTEXT_LINES + 1) {
      last = changed[j] as number;
      j++;
    }
    const start = Math.max(0, (changed[i] as number) - DIFF_CONTEXT_LINES);
    const end = Math.min(ops.length, last + DIFF_CONTEXT_LINES + 1);
    out.push(...renderHunk(ops, start, end));
    i = j;
  }
  return out;
}

function renderHunk(ops: readonly Op[], start: number, end: number): string[] {
  let oldBefore = 0;
  let newBefore = 0;
  for (let i = 0; i < start; i++) {
    const op = ops[i] as Op;
    if (op.kind !== "+") oldBefore++;
    if (op.kind !== "-") newBefore++;
  }
  let oldCount = 0;
  let newCount = 0;
  const body: string[] = [];
  for (let i = start; i < end; i++) {
    const op = ops[i] as Op;
    if (op.kind !== "+") oldCount++;
    if (op.kind !== "-") newCount++;
    if (op.line.endsWith("\n")) {
      body.push(`${op.kind}${op.line.slice(0, -1)}`);
    } else {
      body.push(`${op.kind}${op.line}`, "\\ No newline at end of file");
    }
  }
  return [`@@ -${range(oldBefore, oldCount)} +${range(newBefore, newCount)} @@`, ...body];
}

/** `start,count` as diff -u writes it: an empty range starts at the line before it. */
function range(before: number, count: number): string {
  if (count === 0) return `${before},0`;
  if (count === 1) return `${before + 1}`;
  return `${before + 1},${count}`;
}
