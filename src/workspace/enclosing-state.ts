import { lstatSync } from "node:fs";
import path from "node:path";
import { RESERVED_DIR } from "./fs.js";

/**
 * The harness state directory a workspace lies in, if any: the nearest of the workspace itself and
 * its ancestors that is named `.harness` and holds a `sessions` directory (what harness creates in
 * every workspace it opens). A workspace there is made of another workspace's journals and
 * artifacts, so nothing may treat it as an ordinary tree: the CLI refuses to open it and the
 * sandbox hides it. `realRoot` is the workspace's canonical path.
 */
export function enclosingStateDir(realRoot: string): string | undefined {
  let current = path.resolve(realRoot);
  for (;;) {
    if (path.basename(current) === RESERVED_DIR && isDirectory(path.join(current, "sessions")))
      return current;
    const parent = path.dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

function isDirectory(target: string): boolean {
  try {
    return lstatSync(target).isDirectory();
  } catch {
    return false;
  }
}
