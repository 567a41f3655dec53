import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MAX_STORED_OUTPUT_BYTES } from "../../src/sandbox/capture.js";
import { dirsPerTest, shellStandIn } from "./helpers.js";

const TOTAL = 200_000_000;

const dirs = dirsPerTest("big");

interface Done {
  status: string;
  data: {
    truncated: boolean;
    stdout: {
      bytes: number;
      lines: number;
      truncated: boolean;
      head: string;
      tail: string;
      artifact: { id: string; bytes: number } | null;
      artifact_error?: string;
    };
  };
  peakRss: number;
  hwm: number;
}

/** Run the shell tool in a fresh node process (so RSS is its alone) and collect its report. */
async function runInChild(command: string, sandbox: string): Promise<{ baseline: number; done: Done }> {
  const { script, argument } = await shellStandIn(dirs, command, sandbox, { timeoutMs: 120_000 });
  const child = spawn(process.execPath, ["--expose-gc", script, argument], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let text = "";
  child.stdout.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  const code = await new Promise((resolve) => child.once("exit", resolve));
  expect(code).toBe(0);
  const events = text
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { event: string; rss?: number } & Done);
  const baseline = events.find((event) => event.event === "baseline")!.rss!;
  const done = events.find((event) => event.event === "done")!;
  return { baseline, done };
}

describe("200 MB of output", () => {
  it("keeps harness memory bounded, and stores none of a stream past MAX_STORED_OUTPUT_BYTES", {
    timeout: 180_000,
  }, async () => {
    const { baseline, done } = await runInChild(
      `head -c ${TOTAL} /dev/zero | tr '\\0' 'a'`,
      "workspace-write",
    );
    expect(done.status).toBe("ok");
    const stdout = done.data.stdout;
    expect(stdout.bytes).toBe(TOTAL);
    expect(stdout.lines).toBe(1);
    expect(stdout.truncated).toBe(true);
    expect(done.data.truncated).toBe(true);
    expect(stdout.head).toBe("a".repeat(8192));
    expect(stdout.tail).toBe("a".repeat(8192));
    // Storing all of it would let a command fill the disk (test/e2e/attack-output-flood.test.ts).
    expect(stdout.artifact).toBeNull();
    expect(stdout.artifact_error).toBe(
      `the output passed ${MAX_STORED_OUTPUT_BYTES} bytes and was not stored; only its head and tail are kept`,
    );
    expect(readdirSync(path.join(dirs.scratch, "artifacts"))).toEqual([]);
    // A bound, not a timing claim: holding the output would need > 200 MB.
    const growth = Math.max(done.peakRss, done.hwm) - baseline;
    expect(growth).toBeLessThan(100 * 1024 * 1024);
  });
});
