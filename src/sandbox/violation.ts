import path from "node:path";
import { isWithin } from "./host-view.js";
import type { Sandbox } from "./sandbox.js";

/** The error texts a refused write produces (EROFS from a read-only bind, EACCES otherwise). */
const REFUSAL = /Read-only file system|Permission denied/;

/**
 * Paths named on a refusal line, in the forms common tools print them:
 * `bash: /etc/x: Read-only file system`, `touch: cannot touch '/etc/x': ...`,
 * `mkdir: cannot create directory ‘/x’: ...`, `python: [Errno 30] ...: '/etc/x'`.
 * EROFS always concerns a write, so a bare name counts; "Permission denied" also comes from
 * running a non-executable file, so there only names with a slash count.
 */
function pathsOnLine(line: string): string[] {
  const bareNamesCount = line.includes("Read-only file system");
  const found: string[] = [];
  for (const match of line.matchAll(/['‘"`]([^'’"`]+)['’"`]/g)) found.push(match[1]!);
  // The first segment is the reporting program ("/usr/bin/bash: line 1: x: ..."), never the target.
  for (const segment of line.split(": ").slice(1)) {
    const candidate = segment.trim();
    if (candidate.length === 0 || /\s/.test(candidate)) continue;
    if (bareNamesCount || candidate.includes("/")) found.push(candidate);
  }
  return found;
}

/**
 * Whether a failed command's stderr shows the sandbox refusing a write: a refusal message naming
 * a path the sandbox forbids writing. Returns a description safe to show (workspace-relative, or
 * "outside the workspace"), or undefined when the failure is an ordinary one.
 */
export async function findSandboxViolation(
  stderr: string,
  sandbox: Sandbox,
  workspace: string,
): Promise<string | undefined> {
  if (!sandbox.isolating) return undefined;
  for (const line of stderr.split("\n")) {
    if (!REFUSAL.test(line)) continue;
    for (const candidate of pathsOnLine(line)) {
      const absolute = path.resolve(workspace, candidate);
      if (!(await sandbox.forbidsWrite(absolute, workspace))) continue;
      const relative = path.relative(workspace, absolute);
      const inside = isWithin(absolute, workspace);
      return inside
        ? `${relative.split(path.sep).join("/") || "."} (read-only in the sandbox)`
        : "outside the workspace";
    }
  }
  return undefined;
}
