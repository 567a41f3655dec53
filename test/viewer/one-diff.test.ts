import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Page } from "playwright-core";
import { afterAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { escapeLines } from "../../src/shared/terminal-text.js";
import { type FileSide, fileDiff, MAX_DIFF_BYTES } from "../../src/shared/unified-diff.js";
import { createWriteFileTool } from "../../src/tools/files/write-file.js";
import { approvalView } from "../../src/ui/approval.js";
import type { UiStyle } from "../../src/ui/ui.js";
import { reportHtml, type ViewerRecord } from "../../src/viewer/page.js";
import { removeTempDirs, tempDir } from "../e2e/helpers.js";
import { Session } from "../tools/helpers.js";
import { memoryFactory } from "../workspace/fixtures.js";
import { sharedChromium } from "./browser.js";
import { startStubServer } from "./stub-server.js";

/**
 * One diff everywhere: for each kind of change, the chat's approval preview, the tool result's
 * recorded diff, `harness report`'s page and the live viewer all show the bytes of
 * shared/unified-diff.ts, and nothing else.
 */

const utf8 = new TextEncoder();
const big = utf8.encode("x\n".repeat(MAX_DIFF_BYTES / 2 + 1));

interface Case {
  name: string;
  path: string;
  before: FileSide;
  /** null: the file is deleted (no tool does that; a shell command's change is recorded so). */
  after: string | null;
}

const CASES: Case[] = [
  { name: "no trailing newline", path: "a.txt", before: utf8.encode("one\ntwo\n"), after: "one\ntwo" },
  { name: "CRLF", path: "crlf.txt", before: utf8.encode("a\r\nb\r\nc\r\n"), after: "a\r\nB\r\nc\r\n" },
  { name: "empty file", path: "empty.txt", before: utf8.encode(""), after: "now text\n" },
  { name: "new file", path: "dir/new.txt", before: null, after: "fresh\nlines\n" },
  { name: "deleted file", path: "gone.txt", before: utf8.encode("bye\n"), after: null },
  { name: "binary", path: "img.bin", before: new Uint8Array([0x89, 0x50, 0, 0xff]), after: "text now\n" },
  { name: "oversize", path: "big.log", before: big, after: "small\n" },
];

const plain: UiStyle = {
  bold: (t) => t,
  dim: (t) => t,
  red: (t) => t,
  green: (t) => t,
  yellow: (t) => t,
  cyan: (t) => t,
};

const expected = (c: Case) => fileDiff(c.path, c.before, c.after === null ? null : utf8.encode(c.after));

/** What write_file records for the change (run against a memory workspace holding `before`). */
async function recordedByTool(c: Case): Promise<string> {
  const files: Record<string, Uint8Array> = c.before instanceof Uint8Array ? { [c.path]: c.before } : {};
  const fixture = await memoryFactory(files);
  try {
    const session = new Session(fixture.fs);
    if (c.before instanceof Uint8Array) session.observed.set(c.path, sha256Hex(c.before));
    const out = await session.run(createWriteFileTool(), { path: c.path, content: c.after });
    return String(out.data?.diff);
  } finally {
    await fixture.dispose();
  }
}

/** The chat's approval preview of the write, the diff lines only (as the terminal shows them). */
async function chatPreview(c: Case): Promise<string[]> {
  const args = { path: c.path, content: c.after };
  const view = await approvalView(
    {
      callId: "c1",
      tool: "write_file",
      effect: "local_write",
      arguments: args,
      callHash: "0".repeat(64),
      subject: { kind: "path", value: c.path },
    },
    plain,
    async () => {
      if (!(c.before instanceof Uint8Array)) return undefined;
      return c.before.byteLength > MAX_DIFF_BYTES ? { size: c.before.byteLength } : c.before;
    },
  );
  return view.lines.slice(1).map((line) => line.text);
}

const now = new Date(0).toISOString();
const records = (): Omit<ViewerRecord, "seq">[] => [
  { type: "session.started", time: now, data: { goal: "diffs", provider: { kind: "scripted" } } },
  {
    type: "model.reply",
    time: now,
    data: {
      step: 0,
      text: "",
      calls: CASES.map((c, i) => ({
        id: `c${i}`,
        name: "write_file",
        arguments: { path: c.path, content: "" },
      })),
      stop_reason: "tool_calls",
    },
  },
  ...CASES.map((c, i) => ({
    type: "tool.result",
    time: now,
    data: {
      call_id: `c${i}`,
      name: "write_file",
      status: "ok",
      summary: "wrote",
      content: "",
      duration_ms: 1,
      data: { path: c.path, diff: expected(c) },
    },
  })),
];

/** Each call's applied diff as the page draws it: its lines' text, joined as the diff's lines. */
async function pageDiffs(page: Page): Promise<string[]> {
  await page
    .locator("pre.diff.applied")
    .nth(CASES.length - 1)
    .waitFor();
  const out: string[] = [];
  for (let i = 0; i < CASES.length; i++) {
    const lines = await page.locator("pre.diff.applied").nth(i).locator(".line").allTextContents();
    out.push(`${lines.join("\n")}\n`);
  }
  return out;
}

const browser = sharedChromium();
afterAll(removeTempDirs);

describe("one diff across the chat, the tool's record, the report and the live viewer", () => {
  it("is the same bytes for every kind of change", async () => {
    // The reference texts themselves, so a change to the one diff is seen here.
    expect(expected(CASES[0]!)).toBe(
      "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+two\n\\ No newline at end of file\n",
    );
    expect(expected(CASES[1]!)).toBe(
      "--- a/crlf.txt\n+++ b/crlf.txt\n@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n",
    );
    expect(expected(CASES[2]!)).toBe("--- a/empty.txt\n+++ b/empty.txt\n@@ -0,0 +1 @@\n+now text\n");
    expect(expected(CASES[3]!)).toBe("--- /dev/null\n+++ b/dir/new.txt\n@@ -0,0 +1,2 @@\n+fresh\n+lines\n");
    expect(expected(CASES[4]!)).toBe("--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n");
    expect(expected(CASES[5]!)).toBe("Binary files a/img.bin and b/img.bin differ\n");
    expect(expected(CASES[6]!)).toBe(
      `Files a/big.log and b/big.log differ (${big.byteLength} → 6 bytes, too large to show)\n`,
    );

    for (const c of CASES) {
      const diff = expected(c);
      if (c.after !== null) {
        expect(await recordedByTool(c), `${c.name}: write_file's record`).toBe(diff);
        // The chat shows the same text, escaped for the terminal (a CR as \x0d), line for line.
        expect(await chatPreview(c), `${c.name}: chat approval`).toEqual(
          escapeLines(diff).map((l) => `  ${l}`),
        );
      }
    }

    const file = join(await tempDir(), "report.html");
    const numbered = records().map((r, seq) => ({ ...r, seq }));
    await writeFile(
      file,
      reportHtml(numbered, {
        session: "s1",
        generated: now,
        verdict: { ok: true, records: numbered.length, problems: [] },
      }),
    );
    const report = await browser().newPage();
    await report.goto(pathToFileURL(file).href);
    expect(await pageDiffs(report)).toEqual(CASES.map(expected));
    await report.close();

    const server = await startStubServer();
    try {
      server.addSession("s1", records());
      const live = await browser().newPage();
      await live.goto(`${server.url}/?token=${server.token}&session=s1`);
      expect(await pageDiffs(live)).toEqual(CASES.map(expected));
      await live.close();
    } finally {
      await server.close();
    }
  }, 120_000);
});
