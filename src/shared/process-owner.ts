import { hostname } from "node:os";
import { errnoCode } from "./errno.js";
import type { JsonObject } from "./json.js";
import { processStartTime } from "./proc-stat.js";

/**
 * Who holds a lock, as its lock file records it, and whether that process still runs. The
 * session writer lock and the per-file write locks judge their owners the same way: only from
 * evidence on this host (the pid no longer exists, or it now belongs to a process with a
 * different start time). Age alone proves nothing, and another host's owner cannot be checked.
 */
export interface ProcessOwner {
  pid: number;
  host: string;
  /** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); null where unreadable. */
  proc_start: string | null;
}

/** This process as an owner. */
export function thisProcess(): ProcessOwner {
  return { pid: process.pid, host: hostname(), proc_start: processStartTime(process.pid) };
}

/** The owner fields of a parsed lock file (external input), or undefined when they are malformed. */
export function parseProcessOwner(value: JsonObject): ProcessOwner | undefined {
  const { pid, host, proc_start } = value;
  // pid must be a positive integer: kill(0, …) or kill(-n, …) would address process groups.
  if (typeof pid !== "number" || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
  if (typeof host !== "string") return undefined;
  if (proc_start !== null && typeof proc_start !== "string") return undefined;
  return { pid, host, proc_start };
}

export type Liveness = { state: "alive" } | { state: "gone" | "unknown"; reason: string };

/** Whether the owner still runs, judged only from evidence on this host. */
export function ownerLiveness(owner: ProcessOwner): Liveness {
  if (owner.host !== hostname()) {
    return { state: "unknown", reason: "it was taken on another host, so it cannot be checked from here" };
  }
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ESRCH") return { state: "gone", reason: `no process ${owner.pid} exists` };
    // EPERM: the process exists but belongs to another user.
    if (code !== "EPERM") return { state: "unknown", reason: `cannot check process ${owner.pid}` };
  }
  const start = processStartTime(owner.pid);
  if (owner.proc_start !== null && start !== null && start !== owner.proc_start) {
    return { state: "gone", reason: `process ${owner.pid} is a different process now (pid reused)` };
  }
  return { state: "alive" };
}
