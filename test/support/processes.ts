import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { readProcStat } from "../../src/shared/proc-stat.js";

/** Whether a process still runs: a zombie (killed, not yet reaped) or a vanished pid does not. */
export function alive(pid: number): boolean {
  const stat = readProcStat(pid);
  return stat !== undefined && stat.state !== "Z" && stat.state !== "X";
}

/** Poll `check` every 50 ms until it holds or `ms` pass; the last answer is returned. */
export async function eventually(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return check();
}

/** Live processes whose command line contains `marker` (a zombie counts as gone). */
export function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.includes(marker) && alive(Number(entry))) found.push(Number(entry));
    } catch {
      // gone between the listing and the read
    }
  }
  return found;
}

/** The pid of a process that has exited: no process has it (until the kernel hands it out again). */
export async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  if (child.pid === undefined) throw new Error("no pid");
  return child.pid;
}
