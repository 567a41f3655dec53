import { describe, expect, it } from "vitest";
import { createStyle } from "../../src/cli/style.js";
import { MODEL_PREFIX } from "../../src/ui/lines.js";
import { OutputTail } from "../../src/ui/output-tail.js";

const plain = createStyle(false);

describe("the last lines of a running command", () => {
  it("shows the last three non-empty lines under the output prefix, however the output was cut", () => {
    const tail = new OutputTail();
    tail.append("one\ntw");
    tail.append("o\nthree\n\nfo");
    tail.append("ur\n");
    expect(tail.lines(plain).map((line) => line.text)).toEqual([
      `    ${MODEL_PREFIX}two`,
      `    ${MODEL_PREFIX}three`,
      `    ${MODEL_PREFIX}four`,
    ]);
  });

  it("escapes control sequences and keeps what a carriage return redrew", () => {
    const tail = new OutputTail();
    tail.append("progress 10%\rprogress 90%\r\n\u001b]0;title\u0007\u001b[2Jdone\n");
    const lines = tail.lines(plain).map((line) => line.text);
    expect(lines[0]).toBe(`    ${MODEL_PREFIX}progress 90%`);
    expect(lines[1]).not.toContain("\u001b");
    expect(lines[1]).not.toContain("\u0007");
    expect(lines[1]).toContain("done");
  });

  it("cuts a long line to a glance", () => {
    const tail = new OutputTail();
    tail.append(`${"y".repeat(1000)}\n`);
    const [line] = tail.lines(plain);
    expect(line!.text.length).toBeLessThan(200);
    expect(line!.text.endsWith("…")).toBe(true);
  });
});
