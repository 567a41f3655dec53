import { describe, expect, it } from "vitest";
import { createStyle } from "../../src/cli/style.js";
import { boundedText, commandOutputLines, diffLines } from "../../src/ui/call-lines.js";

const plain = createStyle(false);
const texts = (lines: readonly { text: string }[]) => lines.map((line) => line.text);

describe("what run and chat show of a finished call", () => {
  it("a diff's lines from a hostile file are escaped under the prefix; a long diff is cut with a note", () => {
    const diff = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+\u001b[2Jnew\u202e\n";
    expect(texts(diffLines(plain, diff))).toEqual([
      "  │ --- a/x",
      "  │ +++ b/x",
      "  │ @@ -1 +1 @@",
      "  │ -old",
      "  │ +\\x1b[2Jnew\\u202e",
    ]);
    const long = `--- a/x\n+++ b/x\n@@ -1,100 +1,100 @@\n${Array.from({ length: 100 }, (_, i) => `+${i}`).join("\n")}\n`;
    const shown = texts(diffLines(plain, long));
    expect(shown).toHaveLength(81);
    expect(shown.at(-1)).toBe("  │ … 23 more lines of this diff not shown");
  });

  it("output: the first and last lines, the middle elided with the command that shows it all", () => {
    const text = `${Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join("\n")}\n`;
    const shown = texts(boundedText(plain, text, "harness inspect S --call c1"));
    expect(shown.slice(0, 2)).toEqual(["  │ line 1", "  │ line 2"]);
    expect(shown[8]).toBe("  │ … 14 lines not shown (all of them: harness inspect S --call c1)");
    expect(shown.at(-1)).toBe("  │ line 30");
    expect(shown).toHaveLength(17);
    // Short output is shown whole; a CRLF ending is a line ending.
    expect(texts(boundedText(plain, "a\r\nb\r\n"))).toEqual(["  │ a", "  │ b"]);
  });

  it("a stream whose middle the result did not keep: its head and tail around the omitted bytes", () => {
    const lines = commandOutputLines(
      plain,
      {
        stdout: { bytes: 5000, head: "h1\nh2\n", tail: "t1\nt2\n", truncated: true, omitted_bytes: 4980 },
        stderr: { bytes: 0, head: "", tail: "", truncated: false, omitted_bytes: 0 },
      },
      "harness inspect S --call c1",
    );
    expect(texts(lines)).toEqual([
      "  stdout:",
      "  │ h1",
      "  │ h2",
      "  │ … 4980 bytes not shown (all of it: harness inspect S --call c1)",
      "  │ t1",
      "  │ t2",
    ]);
  });
});
