import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { errnoCode } from "../shared/errno.js";
import { type ProcStat, readProcStat } from "../shared/proc-stat.js";

/**
 * Read-only views of Linux /proc used to find the processes a command left behind. All reads are
 * synchronous: procfs answers from kernel memory, and a consistent snapshot matters more than
 * not blocking for the few microseconds a read takes. One process's stat is read by
 * shared/proc-stat.ts.
 */

function isLive(stat: ProcStat): boolean {
  return stat.state !== "Z" && stat.state !== "X";
}

/** Pids of all processes currently listed in /proc. */
function allPids(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    const pid = Number(name);
    if (Number.isInteger(pid) && pid > 0) pids.push(pid);
  }
  return pids;
}

/**
 * Whether any process (a zombie included) is in the process group `pgid`: one kill(2) with
 * signal 0, which fails with ESRCH only when the group has no member at all. Lets the callers
 * below skip reading every process's stat when the answer is already none.
 */
function groupHasMembers(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    return errnoCode(error) !== "ESRCH";
  }
}

/** Live processes whose process group is `pgid`. */
export function liveGroupMembers(pgid: number): ProcStat[] {
  if (!groupHasMembers(pgid)) return [];
  const members: ProcStat[] = [];
  for (const pid of allPids()) {
    const stat = readProcStat(pid);
    if (stat !== undefined && stat.pgid === pgid && isLive(stat)) members.push(stat);
  }
  return members;
}

/** The pid namespace of a process as the kernel names it ("pid:[4026532178]"), if readable. */
export function pidNamespaceOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return undefined;
  }
}

/** Live processes inside the pid namespace `namespace` (as returned by pidNamespaceOf). */
export function liveNamespaceMembers(namespace: string): ProcStat[] {
  const members: ProcStat[] = [];
  for (const pid of allPids()) {
    if (pidNamespaceOf(pid) !== namespace) continue;
    const stat = readProcStat(pid);
    if (stat !== undefined && isLive(stat)) members.push(stat);
  }
  return members;
}

let cachedBootId: string | undefined;

/** This boot's random id; a recorded process identity from another boot names nothing alive. */
export function currentBootId(): string {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    } catch {
      cachedBootId = "";
    }
  }
  return cachedBootId;
}

/**
 * Send a signal. "No such process" means the target already exited; "not permitted" means it is
 * not ours (it changed identity): neither is a reason to stop terminating the rest.
 */
export function signalQuietly(target: number, signal: NodeJS.Signals): void {
  try {
    process.kill(target, signal);
  } catch (error) {
    const code = errnoCode(error);
    if (code !== "ESRCH" && code !== "EPERM") throw error;
  }
}
