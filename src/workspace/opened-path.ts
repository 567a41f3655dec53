import { promises as fsp } from "node:fs";

/**
 * Where an open file descriptor really is, read from the kernel (Linux `/proc/self/fd`). Unlike
 * a path checked before opening, this cannot be changed by someone swapping a directory for a
 * symlink in between: it names the object that was opened. Undefined where /proc is absent.
 */
let procAvailable: boolean | undefined;

export async function openedPath(fd: number): Promise<string | undefined> {
  if (procAvailable === false) return undefined;
  try {
    const target = await fsp.readlink(`/proc/self/fd/${fd}`);
    procAvailable = true;
    // A file deleted after it was opened still names its old location.
    return target.endsWith(" (deleted)") ? target.slice(0, -" (deleted)".length) : target;
  } catch (error) {
    if (procAvailable === undefined) procAvailable = false;
    if (procAvailable === false) return undefined;
    throw error;
  }
}

/** A path that reads the object behind an open descriptor, when /proc is there. */
export function descriptorPath(fd: number): string {
  return `/proc/self/fd/${fd}`;
}
