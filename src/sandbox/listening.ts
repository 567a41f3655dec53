import { readFileSync } from "node:fs";

/**
 * Whether a TCP port listens in the network namespace of a process, read from the host side.
 * A port probe from the host cannot see a server inside the sandbox's own network namespace
 * (its loopback is not the host's), but the kernel shows each namespace's sockets at
 * /proc/PID/net/tcp{,6} for any process of it, and harness may read those of its own children.
 */

/** TCP state LISTEN as /proc/net/tcp writes it. */
const LISTEN = "0A";

/** Whether one of the processes `pids` sees a socket listening on `port` (any address). */
export function listensOn(pids: readonly number[], port: number): boolean {
  for (const pid of pids) {
    const tables = ["tcp", "tcp6"].map((name) => readTable(`/proc/${pid}/net/${name}`));
    if (tables.every((table) => table === undefined)) continue;
    return tables.some((table) => table !== undefined && tableListens(table, port));
  }
  return false;
}

function readTable(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** Lines look like `0: 0100007F:1F90 00000000:0000 0A ...`: local address:port (hex), remote, state. */
export function tableListens(table: string, port: number): boolean {
  for (const line of table.split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    if (local === undefined || fields[3] !== LISTEN) continue;
    const hex = local.slice(local.lastIndexOf(":") + 1);
    if (Number.parseInt(hex, 16) === port) return true;
  }
  return false;
}
