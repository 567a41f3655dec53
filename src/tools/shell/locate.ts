import { accessSync, constants, realpathSync } from "node:fs";
import path from "node:path";
import { isInside } from "../../workspace/disk-paths.js";

const FALLBACK_SHELL = "/bin/sh";
const found = new Map<string, string>();

/** Absolute path of bash on `searchPath` (or the usual places), else /bin/sh. Cached per PATH. */
export function locateShell(searchPath: string | undefined): string {
  const key = searchPath ?? "";
  let shell = found.get(key);
  if (shell === undefined) {
    const directories = [...key.split(":").filter((d) => path.isAbsolute(d)), "/usr/bin", "/bin"];
    shell = directories.map((d) => path.join(d, "bash")).find(isExecutable) ?? FALLBACK_SHELL;
    found.set(key, shell);
  }
  return shell;
}

/** Whether `file` exists and this process may execute it. */
export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The real path of `program` when harness may start it on the host for a workspace at `root`
 * (a real path): undefined when it, or where its links lead, lies inside the workspace. Why: the
 * workspace is what the model writes, and a PATH can name a directory in it (an activated
 * `.venv/bin`, direnv's `PATH_add bin`, `$PWD/node_modules/.bin`); a program found there would be
 * the model's code run outside every sandbox. Callers start the returned real path, so no link can
 * be swapped in between this check and the start.
 */
export function programOutside(program: string, root: string): string | undefined {
  let real: string;
  try {
    real = realpathSync(program);
  } catch {
    return undefined;
  }
  return isInside(root, real) ? undefined : real;
}

/**
 * `searchPath` without the directories a name could be found in that the model can write: relative
 * entries (they resolve in the workspace, a command's working directory) and those inside the
 * workspace at `root` (a real path), as written or where their links lead. For programs harness
 * starts without a sandbox by way of a shell (command hooks), where a name is looked up by the
 * shell itself.
 */
export function pathOutside(searchPath: string, root: string): string {
  const kept = searchPath.split(":").filter((directory) => {
    if (!path.isAbsolute(directory)) return false;
    if (isInside(root, path.resolve(directory))) return false;
    try {
      return !isInside(root, realpathSync(directory));
    } catch {
      return true;
    }
  });
  return kept.join(":");
}
