import { readFileSync } from "node:fs";

/**
 * The one reader of Linux's /proc/<pid>/stat. A process's start time (field 22, clock ticks since
 * boot) is what tells a live owner from a new process that reuses its pid: writer locks, per-file
 * write locks and the process-tree killer all depend on reading it the same way.
 */

export interface ProcStat {
  pid: number;
  /** One-letter state; "Z" (zombie) and "X" (dead) are exited processes awaiting their reaper. */
  state: string;
  ppid: number;
  pgid: number;
  sid: number;
  /** Start time in clock ticks since boot: with the boot id, it identifies a process uniquely. */
  startTicks: number;
}

const INTEGER = /^-?\d+$/;

/**
 * Parse the text of /proc/<pid>/stat, or undefined when it is not well-formed. Field 2 (the
 * command name, in parentheses) may itself contain spaces and ") ", so fields are split after
 * the last ")"; everything after it is plain.
 */
export function parseProcStat(pid: number, text: string): ProcStat | undefined {
  const close = text.lastIndexOf(")");
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).split(" ");
  const state = fields[0]; // field 3
  const raw = [fields[1], fields[2], fields[3], fields[19]]; // fields 4, 5, 6 and 22
  if (state === undefined || state === "" || raw.some((field) => field === undefined || !INTEGER.test(field)))
    return undefined;
  const [ppid, pgid, sid, startTicks] = raw.map(Number) as [number, number, number, number];
  if (!Number.isSafeInteger(startTicks)) return undefined;
  return { pid, state, ppid, pgid, sid, startTicks };
}

/** /proc/<pid>/stat of a process, or undefined when it is gone or there is no procfs. */
export function readProcStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    // latin1 maps every byte to one character: a command name that is not UTF-8 cannot shift fields.
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
  return parseProcStat(pid, text);
}

/** A process's start time as lock files record it (decimal clock ticks), or null where unreadable. */
export function processStartTime(pid: number): string | null {
  const stat = readProcStat(pid);
  return stat === undefined ? null : String(stat.startTicks);
}
