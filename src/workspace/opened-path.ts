import { readlinkSync } from "node:fs";

/**
 * Where an open file descriptor really is, read from the kernel (Linux `/proc/self/fd`). Unlike
 * a path checked before opening, this cannot be changed by someone swapping a directory for a
 * symlink in between: it names the object that was opened. Undefined where /proc is absent.
 *
 * Synchronous on purpose: it is a few microseconds in the kernel, where a trip through the
 * thread pool costs tens of microseconds on every file operation.
 */
let procAvailable: boolean | undefined;

export function openedPath(fd: number): string | undefined {
  if (procAvailable === false) return undefined;
  try {
    const target = readlinkSync(descriptorPath(fd));
    procAvailable = true;
    // A file deleted after it was opened still names its old location.
    return target.endsWith(" (deleted)") ? target.slice(0, -" (deleted)".length) : target;
  } catch (error) {
    if (procAvailable === undefined) {
      procAvailable = false;
      return undefined;
    }
    throw error;
  }
}

/** A path that reaches the object behind an open descriptor (meaningful when /proc exists). */
export function descriptorPath(fd: number): string {
  return `/proc/self/fd/${fd}`;
}
