import { closeSync, constants, fsyncSync, openSync } from "node:fs";

/** Flush a file or directory to disk (a directory: so the names created or renamed in it last). */
export function fsyncPath(path: string): void {
  const fd = openSync(path, constants.O_RDONLY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
