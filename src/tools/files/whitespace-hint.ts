/**
 * Why an exact old_text was not found, when the only difference is whitespace: the model copied
 * the text but lost tabs, trailing spaces or CR characters along the way. Saying where and what
 * lets it fix old_text instead of guessing.
 */
export interface WhitespaceHint {
  /** First and last 1-based line of the near match. */
  startLine: number;
  endLine: number;
  message: string;
}

export function whitespaceHint(text: string, oldText: string): WhitespaceHint | undefined {
  return lineEndingHint(text, oldText) ?? spacingHint(text, oldText);
}

function lineEndingHint(text: string, oldText: string): WhitespaceHint | undefined {
  if (!oldText.includes("\n")) return undefined;
  const asCrlf = oldText.replace(/\r?\n/g, "\r\n");
  const asLf = oldText.replace(/\r\n/g, "\n");
  for (const [candidate, detail] of [
    [
      asCrlf,
      "the file uses CRLF (\\r\\n) line breaks there but old_text uses LF (\\n); send old_text with \\r\\n",
    ],
    [
      asLf,
      "the file uses LF (\\n) line breaks there but old_text uses CRLF (\\r\\n); send old_text with \\n",
    ],
  ] as const) {
    if (candidate === oldText) continue;
    const index = text.indexOf(candidate);
    if (index === -1) continue;
    const startLine = lineOf(text, index);
    const endLine = lineOf(text, index + candidate.length - 1);
    return {
      startLine,
      endLine,
      message: `${where(startLine, endLine)} matches except for line endings: ${detail}`,
    };
  }
  return undefined;
}

function spacingHint(text: string, oldText: string): WhitespaceHint | undefined {
  const oldRaw = trimBlankEdges(oldText.split("\n"));
  if (oldRaw.length === 0) return undefined;
  const want = oldRaw.map(normalize);
  const fileRaw = text.split("\n");
  const have = fileRaw.map(normalize);
  const k = want.length;
  for (let i = 0; i + k <= have.length; i++) {
    if (!nearMatch(have, want, i)) continue;
    const region = fileRaw.slice(i, i + k);
    return {
      startLine: i + 1,
      endLine: i + k,
      message: `${where(i + 1, i + k)} matches except for whitespace: ${describe(region, oldRaw, i + 1)}`,
    };
  }
  return undefined;
}

function nearMatch(have: readonly string[], want: readonly string[], at: number): boolean {
  const k = want.length;
  if (k === 1) return (have[at] as string).includes(want[0] as string);
  if (!(have[at] as string).endsWith(want[0] as string)) return false;
  for (let j = 1; j < k - 1; j++) if (have[at + j] !== want[j]) return false;
  return (have[at + k - 1] as string).startsWith(want[k - 1] as string);
}

function describe(fileLines: readonly string[], oldLines: readonly string[], firstLine: number): string {
  const reasons: string[] = [];
  const fileText = fileLines.join("\n");
  const oldText = oldLines.join("\n");
  if (fileText.includes("\t") && !oldText.includes("\t"))
    reasons.push("the file has tabs where old_text has spaces");
  if (!fileText.includes("\t") && oldText.includes("\t"))
    reasons.push("old_text has tabs where the file has spaces");
  const trailing = fileLines.findIndex((line) => /[ \t]\r?$/.test(line));
  if (trailing !== -1 && !oldLines.some((line) => /[ \t]\r?$/.test(line))) {
    reasons.push(`the file has trailing whitespace on line ${firstLine + trailing}`);
  }
  if (oldLines.some((line) => /[ \t]\r?$/.test(line)) && trailing === -1) {
    reasons.push("old_text has trailing whitespace the file does not have");
  }
  if (fileLines.some((line) => line.endsWith("\r")) && !oldText.includes("\r")) {
    reasons.push("the file uses CRLF (\\r\\n) line breaks");
  }
  if (reasons.length === 0) reasons.push("indentation or spacing differs");
  return reasons.join("; ");
}

function normalize(line: string): string {
  return line.replace(/\s+/g, " ").trim();
}

function trimBlankEdges(lines: string[]): string[] {
  let start = 0;
  let end = lines.length;
  while (start < end && normalize(lines[start] as string) === "") start++;
  while (end > start && normalize(lines[end - 1] as string) === "") end--;
  return lines.slice(start, end);
}

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

function where(startLine: number, endLine: number): string {
  return startLine === endLine ? `line ${startLine}` : `lines ${startLine}-${endLine}`;
}
