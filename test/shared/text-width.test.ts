import { visibleWidth } from "@mariozechner/pi-tui";
import { describe, expect, it } from "vitest";
import { fitLine } from "../../src/cli/fit.js";
import { displayWidth, padEndWidth, truncateToWidth } from "../../src/shared/text-width.js";

/** Text a table may hold, with the columns a terminal gives it. */
const SAMPLES: [string, number][] = [
  ["abc", 3],
  ["日本語", 6],
  ["한국어", 6],
  ["ｆｕｌｌ", 8],
  ["👍", 2],
  ["👨‍👩‍👧", 2], // a ZWJ family: one cluster
  ["🇯🇵", 2], // a flag: two regional indicators, one cluster
  ["e\u0301", 1], // a combining accent takes no column of its own
  ["ñ̃", 1],
  ["❤️", 2], // text symbol + emoji-presentation selector
  ["☺", 1],
  ["→½", 2], // ambiguous width: narrow
  ["\u001b[1m日本\u001b[0m", 4], // colour takes no columns
];

describe("displayWidth: columns by grapheme cluster, East Asian width and emoji", () => {
  it.each(SAMPLES)("%j takes %i columns", (text, columns) => {
    expect(displayWidth(text)).toBe(columns);
  });

  it("agrees with the chat's renderer (pi-tui) on every sample", () => {
    for (const [text] of SAMPLES) expect(displayWidth(text), JSON.stringify(text)).toBe(visibleWidth(text));
  });

  it("pads to columns, so a column after CJK, emoji or combining text starts at the same place", () => {
    const names = ["plain", "日本語のファイル", "👨‍👩‍👧 family", "cafe\u0301"];
    const width = Math.max(...names.map(displayWidth));
    const rows = names.map((name) => `${padEndWidth(name, width)}  |next`);
    for (const row of rows) expect(displayWidth(row.slice(0, row.indexOf("|")))).toBe(width + 2);
  });
});

describe("truncateToWidth and fitLine: cut to columns, never inside a character", () => {
  it("cuts wide text by columns, with the ellipsis inside the width", () => {
    expect(truncateToWidth("日本語のテキスト", 7)).toBe("日本語…");
    expect(truncateToWidth("日本語のテキスト", 8)).toBe("日本語…"); // a wide character never straddles the edge
    expect(truncateToWidth("👨‍👩‍👧👨‍👩‍👧👨‍👩‍👧", 5)).toBe("👨‍👩‍👧👨‍👩‍👧…");
    expect(truncateToWidth("short", 10)).toBe("short");
  });

  it("fits every line within the width, colour kept and closed", () => {
    for (let width = 1; width <= 20; width++) {
      for (const line of [
        "日本語のテキストとemoji 👍👍👍 mixed",
        "\u001b[31mé́é́é́é́é́é́é́é́é́é́é́é́é́é́é́é́é́é́é́é́é́\u001b[0m",
      ]) {
        const fitted = fitLine(line, width);
        expect(displayWidth(fitted), `${line} at ${width}`).toBeLessThanOrEqual(width);
        expect(displayWidth(fitted)).toBeGreaterThanOrEqual(width - 1);
      }
    }
    expect(fitLine("\u001b[31m日本語のテキスト\u001b[0m", 5)).toBe("\u001b[31m日本…\u001b[0m");
  });
});
