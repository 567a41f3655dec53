import { lstatSync, realpathSync, statSync } from "node:fs";

// Synchronous look-ups used while building a sandbox's mount list: a missing or unreadable path
// is simply not mounted, so "undefined" is the whole answer, not an error.

/** The path's own metadata (not following a final symlink), or undefined. */
export function lstatOrUndefined(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

/** The canonical path with every symlink resolved, or undefined when it does not resolve. */
export function realOrUndefined(p: string): string | undefined {
  try {
    return realpathSync.native(p);
  } catch {
    return undefined;
  }
}

/** The metadata of what the path leads to (links followed), or undefined. */
export function statOrUndefined(p: string) {
  try {
    return statSync(p);
  } catch {
    return undefined;
  }
}
