/**
 * A text's lines without their LF terminators: a final LF ends the last line rather than starting
 * an empty one, and "" has no lines. A CR stays part of its line (callers that show or compare
 * lines decide what a CR means to them).
 */
export function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}
