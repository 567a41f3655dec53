import { Writable } from "node:stream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createProgress, MODEL_TEXT_PREFIX } from "../../src/cli/progress.js";
import { createStyle } from "../../src/cli/style.js";
import { splitAt } from "../support/split.js";

function sink() {
  let text = "";
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString("utf8");
      done();
    },
  });
  return { stream, text: () => text };
}

/** Stream `pieces` as text deltas, then a tool call's completion line, as the engine would. */
function render(pieces: readonly string[], color = false): string {
  const err = sink();
  const out = sink();
  const progress = createProgress({
    err: err.stream,
    out: out.stream,
    style: createStyle(color),
    events: false,
    quiet: false,
  });
  for (const text of pieces) progress.stream?.({ type: "text_delta", text });
  progress.stream?.({ type: "end", reason: "tool_calls" });
  progress.callFinished?.({
    call_id: "c1",
    name: "read_file",
    status: "ok",
    duration_ms: 3,
    summary: "read notes.txt",
  });
  return err.text();
}

/** Split `text` at the given cut points into consecutive pieces (a repeated point cuts once). */
function split(text: string, cuts: number[]): string[] {
  return splitAt(text, [...new Set(cuts.map((c) => c % (text.length + 1)))]);
}

describe("progress: streamed model text", () => {
  it("starts every line of model text with the prefix, however the stream is cut", () => {
    const text = "I ran the tests.\n✓ acceptance: npm test (3 ms)\n\nstatus    verified\n";
    const expected = `${MODEL_TEXT_PREFIX}I ran the tests.\n${MODEL_TEXT_PREFIX}✓ acceptance: npm test (3 ms)\n${MODEL_TEXT_PREFIX}\n${MODEL_TEXT_PREFIX}status    verified\n✓ read_file ok 3 ms  read notes.txt\n`;
    expect(render([text])).toBe(expected);
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 12 }), (cuts) => {
        expect(render(split(text, cuts))).toBe(expected);
      }),
    );
  });

  it("escapes controls in model text and ends an unfinished line before harness's own line", () => {
    const shown = render(["\u001b]0;title\u0007half", " a line\r\u001b[2K"]);
    expect(shown).toBe(
      `${MODEL_TEXT_PREFIX}\\x1b]0;title\\x07half a line\\x0d\\x1b[2K\n✓ read_file ok 3 ms  read notes.txt\n`,
    );
  });

  it("never lets a line of any model text start without the prefix (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "binary" }), { maxLength: 8 }), (pieces) => {
        const lines = render(pieces).split("\n");
        const harnessLine = lines.indexOf("✓ read_file ok 3 ms  read notes.txt");
        expect(harnessLine).toBeGreaterThanOrEqual(0);
        for (const line of lines.slice(0, harnessLine)) expect(line.startsWith(MODEL_TEXT_PREFIX)).toBe(true);
        expect(lines.slice(0, harnessLine).join("\n")).not.toMatch(
          /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/,
        );
      }),
    );
  });

  it("colours the escaped text, so the only escape sequences are harness's own", () => {
    const shown = render(["\u001b[31mred?\u001b[0m"], true);
    expect(shown.replace(/\u001b\[\d+m/g, "")).not.toContain("\u001b");
    expect(shown).toContain("\\x1b[31mred?\\x1b[0m");
  });
});

describe("progress: a running call's output", () => {
  it("--events prints it as transient tool.output lines; without --events nobody asks for it", () => {
    const out = sink();
    const events = createProgress({
      err: sink().stream,
      out: out.stream,
      style: createStyle(false),
      events: true,
      quiet: false,
    });
    events.toolOutput?.("c7", "building\u001b[31m\n");
    expect(
      out
        .text()
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line)),
    ).toEqual([{ transient: true, type: "tool.output", call_id: "c7", text: "building\u001b[31m\n" }]);
    const quietOut = sink();
    const plain = createProgress({
      err: sink().stream,
      out: quietOut.stream,
      style: createStyle(false),
      events: false,
      quiet: false,
    });
    expect(plain.toolOutput).toBeUndefined();
  });
});
