import { accessSync, constants } from "node:fs";
import path from "node:path";

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
