import { createHash } from "node:crypto";
import { closeSync, mkdirSync, openSync, statSync } from "node:fs";
import { homedir } from "node:os";
import path from "node:path";
import { currentBootId } from "./proc.js";

// A successful bwrap probe costs a sandbox start (20-40 ms) in every harness process that runs a
// command; a short task runs exactly one command (its acceptance check), so the probe doubled the
// sandbox's cost. Whether bwrap can create its namespaces does not change while the machine runs,
// so a success is remembered for this boot, this user and this bwrap binary (path, inode, mtime).
// Only success is remembered: a failure is probed again every time. A stale memo can only make the
// first sandboxed command fail at bwrap's own setup, before anything of the command ran, which is
// still failing closed; it never makes a command run unsandboxed.

/** Where a successful probe of `bwrapPath` is remembered, or undefined when it cannot be. */
export function probeMemoPath(bwrapPath: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  try {
    const binary = statSync(bwrapPath);
    const identity = [
      bwrapPath,
      binary.ino,
      binary.mtimeMs,
      binary.size,
      currentBootId(),
      process.getuid?.(),
    ];
    const digest = createHash("sha256").update(JSON.stringify(identity)).digest("hex").slice(0, 32);
    const cache =
      env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME)
        ? env.XDG_CACHE_HOME
        : path.join(homedir(), ".cache");
    return path.join(cache, "harness", `bwrap-ok-${digest}`);
  } catch {
    return undefined;
  }
}

export function probeRemembered(memo: string | undefined): boolean {
  if (memo === undefined) return false;
  try {
    return statSync(memo).isFile();
  } catch {
    return false;
  }
}

/** Remember a successful probe; a failure to write the memo only costs the next process a probe. */
export function rememberProbe(memo: string | undefined): void {
  if (memo === undefined) return;
  try {
    mkdirSync(path.dirname(memo), { recursive: true, mode: 0o700 });
    closeSync(openSync(memo, "w", 0o600));
  } catch {
    // not writable (read-only home, no home): probe again next time
  }
}
