import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import { createToolContext } from "../../src/tools/context.js";
import { LIVE_OUTPUT_MAX_CHARS, LiveOutput } from "../../src/tools/shell/live-output.js";
import { createShellTool } from "../../src/tools/shell/shell.js";
import { dirsPerTest, toolContext } from "./helpers.js";

const dirs = dirsPerTest("live-output");

describe("a running shell command's live output", () => {
  it("is reported while the command runs, scrubbed of secrets, before the result", async () => {
    const tool = createShellTool({
      sandbox: { profile: "none" },
      environment: { PATH: process.env.PATH, EXPLICIT_TOKEN: "live-secret-81f" },
      passEnv: ["EXPLICIT_TOKEN"],
    });
    const { context: base } = toolContext(dirs.workspace, path.join(dirs.scratch, "artifacts"));
    const reports: { text: string; at: number }[] = [];
    const context = createToolContext({
      ...base,
      output: (text) => reports.push({ text, at: performance.now() }),
    });
    const started = performance.now();
    const output = await tool.execute(
      {
        command: 'echo "first $EXPLICIT_TOKEN"; echo oops >&2; sleep 0.6; echo last',
        timeout_ms: 20_000,
      },
      context,
    );
    const finished = performance.now();
    const text = reports.map((report) => report.text).join("");
    expect(text).toContain("first [redacted:EXPLICIT_TOKEN]\n");
    expect(text).toContain("oops\n");
    expect(text).toContain("last\n");
    expect(text).not.toContain("live-secret-81f");
    // The first lines arrived while the command was still sleeping, not with its result.
    const first = reports.find((report) => report.text.includes("first"))!;
    expect(first.at - started).toBeLessThan(finished - started - 400);
    expect(output.content).toContain("last");
  });

  it("is not produced when nobody watches", async () => {
    const tool = createShellTool({ sandbox: { profile: "none" } });
    const { context } = toolContext(dirs.workspace, path.join(dirs.scratch, "artifacts"));
    expect(context.output).toBeUndefined();
    const output = await tool.execute({ command: "echo hi" }, context);
    expect(output.content).toContain("hi");
  });
});

describe("LiveOutput", () => {
  it("batches what arrives within an interval into one report", () => {
    vi.useFakeTimers();
    try {
      const reports: string[] = [];
      const live = new LiveOutput((text) => reports.push(text), 100);
      live.write("stdout", Buffer.from("a\n"));
      vi.advanceTimersByTime(0);
      expect(reports).toEqual(["a\n"]);
      live.write("stdout", Buffer.from("b\n"));
      live.write("stderr", Buffer.from("c\n"));
      vi.advanceTimersByTime(50);
      expect(reports).toEqual(["a\n"]);
      vi.advanceTimersByTime(60);
      expect(reports).toEqual(["a\n", "b\nc\n"]);
      live.write("stdout", Buffer.from("d"));
      live.close();
      expect(reports).toEqual(["a\n", "b\nc\n", "d"]);
      vi.advanceTimersByTime(500);
      expect(reports).toHaveLength(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps a character split across chunks whole, and keeps only the end of a flood", () => {
    const reports: string[] = [];
    const live = new LiveOutput((text) => reports.push(text), 100);
    const euro = Buffer.from("€");
    live.write("stdout", euro.subarray(0, 1));
    live.write("stdout", euro.subarray(1));
    live.write("stdout", Buffer.from(`${"x".repeat(10_000)}\nend\n`));
    live.close();
    expect(reports).toHaveLength(1);
    expect(reports[0]!.length).toBe(LIVE_OUTPUT_MAX_CHARS);
    expect(reports[0]!.endsWith("x\nend\n")).toBe(true);
    const small: string[] = [];
    const again = new LiveOutput((text) => small.push(text), 100);
    again.write("stdout", euro.subarray(0, 2));
    again.write("stdout", euro.subarray(2));
    again.close();
    expect(small).toEqual(["€"]);
  });

  it("a watcher that throws does not reach the command", () => {
    const live = new LiveOutput(() => {
      throw new Error("watcher broke");
    }, 0);
    live.write("stdout", Buffer.from("x"));
    expect(() => live.close()).not.toThrow();
  });
});
