import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseProcStat, processStartTime, readProcStat } from "../../src/shared/proc-stat.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A /proc/<pid>/stat line with `comm` as the command name (52 fields, as Linux writes them). */
function statLine(comm: string, startTicks = "123456"): string {
  const tail = ["S", "41", "42", "43", ...Array.from({ length: 15 }, (_, i) => String(i)), startTicks];
  return `7 (${comm}) ${[...tail, ...Array.from({ length: 30 }, () => "0")].join(" ")}\n`;
}

describe("reading a process's stat from /proc", () => {
  it("splits after the last ')': a command name with spaces and ') ' cannot shift the fields", () => {
    expect(parseProcStat(7, statLine("a) S 1 2 3 (b) 9"))).toEqual({
      pid: 7,
      state: "S",
      ppid: 41,
      pgid: 42,
      sid: 43,
      startTicks: 123456,
    });
  });

  it("refuses text that is not a stat line instead of guessing", () => {
    expect(parseProcStat(7, "garbage")).toBeUndefined();
    expect(parseProcStat(7, "7 (x) S 1 2")).toBeUndefined();
    expect(parseProcStat(7, statLine("x", "12ab"))).toBeUndefined();
    expect(parseProcStat(7, statLine("x", ""))).toBeUndefined();
  });

  it("reads a live child whose executable name holds ') ', and nothing for a pid that does not exist", async () => {
    const dir = mkdtempSync(join(tmpdir(), "harness-proc-"));
    dirs.push(dir);
    const odd = join(dir, "a) Z 1 (b");
    symlinkSync("/bin/sleep", odd);
    const child = spawn(odd, ["5"], { stdio: "ignore" });
    try {
      await new Promise((resolve) => child.once("spawn", resolve));
      const stat = readProcStat(child.pid!);
      expect(stat).toMatchObject({ pid: child.pid, ppid: process.pid });
      expect(stat!.state).not.toBe("Z");
      expect(processStartTime(child.pid!)).toBe(String(stat!.startTicks));
      // The child started after this process did.
      expect(stat!.startTicks).toBeGreaterThanOrEqual(Number(processStartTime(process.pid)));
    } finally {
      child.kill("SIGKILL");
    }
    expect(readProcStat(2 ** 22 + 1)).toBeUndefined();
    expect(processStartTime(2 ** 22 + 1)).toBeNull();
  });
});
