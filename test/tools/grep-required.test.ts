import { describe, expect, it } from "vitest";
import { createGrepTool } from "../../src/tools/files/grep.js";
import { createDiskFixture, memoryFactory } from "../workspace/fixtures.js";
import { Session } from "./helpers.js";

/**
 * The JavaScript matcher skips files that lack a literal every match of the pattern contains
 * (without decoding them); the answer stays what the RegExp decides line by line.
 */
describe.each([
  ["disk", createDiskFixture],
  ["memory", memoryFactory],
] as const)("grep's required-literal pre-filter (%s)", (_name, factory) => {
  const tool = createGrepTool({ engine: "javascript", matchBudgetMs: 2_000 });

  it("does not run the expression on a file without the literal (a catastrophic one answers at once)", async () => {
    // `(a+)+b!zz` backtracks for minutes on 40 a's; every match contains "b!zz", which no file has.
    const fixture = await factory({ "slow.txt": `${"a".repeat(40)}c\n`, "b.txt": "aab!z\n" });
    try {
      const started = Date.now();
      const out = await new Session(fixture.fs).run(tool, { pattern: "(a+)+b!zz" });
      expect(out.content).toBe("(no matches)");
      expect(Date.now() - started).toBeLessThan(1_500);
    } finally {
      await fixture.dispose();
    }
  });

  it("still reports every matching line, and counts binary and non-UTF-8 files that contain it", async () => {
    const fixture = await factory({
      "a.ts": "process.nextTick(x)\nprocessXnextTick\nno\n\uFEFFprocess.nextTick\n",
      "b.ts": "nothing here\n",
      "bin.dat": new Uint8Array([...Buffer.from("process.nextTick"), 0x00, 0x0a]),
      "latin1.txt": new Uint8Array([...Buffer.from("process.nextTick"), 0xe9, 0x0a]),
    });
    try {
      const out = await new Session(fixture.fs).run(tool, { pattern: "process.nextTick" });
      expect(out.content).toBe(
        "a.ts:1:process.nextTick(x)\na.ts:2:processXnextTick\na.ts:4:\uFEFFprocess.nextTick\n" +
          "(2 more files would match but are binary or not UTF-8)",
      );
    } finally {
      await fixture.dispose();
    }
  });

  it("numbers lines as the file has them: empty lines, \\r\\n, several hits on a line, no final newline", async () => {
    const fixture = await factory({
      "c.txt": "\n\nkey=1 key=2\r\nkeyless\r\n\nno\n\u00e9 key=3\nkey=",
      "d.txt": "key=4",
    });
    try {
      // With a required literal ("key="), and without one (an alternation has none).
      const literal = await new Session(fixture.fs).run(tool, { pattern: "key=\\d?" });
      const free = await new Session(fixture.fs).run(tool, { pattern: "^$|key=\\d?" });
      expect(literal.content).toBe("c.txt:3:key=1 key=2\nc.txt:7:\u00e9 key=3\nc.txt:8:key=\nd.txt:1:key=4");
      expect(free.content).toBe(
        "c.txt:1:\nc.txt:2:\nc.txt:3:key=1 key=2\nc.txt:5:\nc.txt:7:\u00e9 key=3\nc.txt:8:key=\nd.txt:1:key=4",
      );
    } finally {
      await fixture.dispose();
    }
  });
});
