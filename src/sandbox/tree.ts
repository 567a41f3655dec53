import { setTimeout as sleep } from "node:timers/promises";
import { readProcStat } from "../shared/proc-stat.js";
import { currentBootId, liveGroupMembers, signalQuietly } from "./proc.js";

/**
 * The set of processes one command owns. Implementations differ in how membership is known:
 * a process group (unsandboxed) or a pid namespace (bwrap).
 */
export interface ProcessTree {
  /** Pids of the command's live processes (sandbox machinery excluded). */
  members(): number[];
  /** Ask every member to stop. */
  signal(signal: NodeJS.Signals): void;
  /** Kill everything at once, sandbox machinery included. */
  kill(): void;
}

const POLL_MS = 20;
/** How long to wait for SIGKILL to take effect before reporting; a D-state process can outlive it. */
const KILL_SETTLE_MS = 2_000;

/** The process group led by `pgid` (a child spawned with `detached: true`). */
export function processGroupTree(pgid: number): ProcessTree {
  const members = () => liveGroupMembers(pgid).map((stat) => stat.pid);
  return {
    members,
    signal: (signal) => {
      // A group id whose members are all gone could be reused by a new group; only signal a live one.
      if (members().length > 0) signalQuietly(-pgid, signal);
    },
    kill: () => {
      if (members().length > 0) signalQuietly(-pgid, "SIGKILL");
    },
  };
}

/**
 * Stop every process of a tree: SIGTERM, up to `graceMs` for them to exit, then SIGKILL, then a
 * short wait until the kernel has removed them. Returns how many distinct processes were alive
 * while terminating (those that were stopped by this call).
 */
export async function terminateTree(tree: ProcessTree, graceMs: number): Promise<number> {
  const seen = new Set(tree.members());
  if (seen.size === 0) {
    tree.kill();
    return 0;
  }
  tree.signal("SIGTERM");
  const graceEnds = Date.now() + graceMs;
  while (Date.now() < graceEnds) {
    await sleep(POLL_MS);
    const alive = tree.members();
    for (const pid of alive) seen.add(pid);
    if (alive.length === 0) break;
  }
  tree.kill();
  const settleEnds = Date.now() + KILL_SETTLE_MS;
  while (tree.members().length > 0 && Date.now() < settleEnds) await sleep(POLL_MS / 2);
  return seen.size;
}

/** What the engine journals about a spawned command, before waiting on it. */
export interface SpawnIdentity {
  /** Pid of the spawned process (the group leader). */
  pid: number;
  /** Its process group id (equal to pid: it was spawned as a group leader). */
  pgid: number;
  /** /proc/sys/kernel/random/boot_id at spawn time. */
  bootId: string;
  /** The leader's start time in clock ticks since boot. */
  startTicks: number;
}

/** Identity of a freshly spawned group leader, read from /proc. */
export function identifySpawn(pid: number): SpawnIdentity {
  return { pid, pgid: pid, bootId: currentBootId(), startTicks: readProcStat(pid)?.startTicks ?? 0 };
}

/**
 * Kill what is left of a process group recorded by an earlier harness process (e.g. one that was
 * SIGKILLed while a command ran unsandboxed). Call it on resume for every spawn identity the
 * journal holds without a matching result, before re-running anything.
 *
 * It refuses to touch a group that is provably not the recorded one: another boot, or a live
 * leader with a different start time (the id was reused). Only members started no earlier than
 * the recorded leader are counted as survivors. Returns the number of processes terminated.
 */
export async function killSurvivors(
  identity: Pick<SpawnIdentity, "pgid"> & Partial<SpawnIdentity>,
  options: { graceMs?: number } = {},
): Promise<number> {
  if (identity.bootId !== undefined && identity.bootId !== currentBootId()) return 0;
  const recordedStart = identity.startTicks;
  if (recordedStart !== undefined) {
    const leader = readProcStat(identity.pgid);
    if (leader !== undefined && leader.startTicks !== recordedStart) return 0;
  }
  const survivors = () =>
    liveGroupMembers(identity.pgid)
      .filter((stat) => recordedStart === undefined || stat.startTicks >= recordedStart)
      .map((stat) => stat.pid);
  const group = processGroupTree(identity.pgid);
  return terminateTree({ ...group, members: survivors }, options.graceMs ?? 2_000);
}
