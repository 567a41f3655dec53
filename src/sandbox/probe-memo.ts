import { createHash } from "node:crypto";
import { closeSync, lstatSync, mkdirSync, openSync, statSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import path from "node:path";
import { currentBootId } from "./proc.js";

// A successful bwrap probe costs a sandbox start (20-40 ms) in every harness process that runs a
// command; a short task runs exactly one command (its acceptance check), so the probe doubled the
// sandbox's cost. Whether bwrap can create its namespaces does not change while the machine runs,
// so a success is remembered for this boot, this user and this bwrap binary (path, inode, size,
// mtime). Only success is remembered: a failure is probed again every time. A stale memo can only
// make the first sandboxed command fail at bwrap's own setup, before anything of the command ran,
// which is still failing closed; it never makes a command run unsandboxed.
//
// Where: first a directory of this user's that lives as long as the boot and does not depend on
// $HOME ($XDG_RUNTIME_DIR, else a private directory in the temporary directory), so a process
// with another or a fresh home (a CI job, a benchmark, a sandboxed harness) still finds it; then
// the user's cache directory, where earlier versions kept it.

/** Where a successful probe of `bwrapPath` may be remembered, most preferred first; [] when nowhere. */
export function probeMemoPaths(bwrapPath: string, env: NodeJS.ProcessEnv = process.env): string[] {
  let digest: string;
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
    digest = createHash("sha256").update(JSON.stringify(identity)).digest("hex").slice(0, 32);
  } catch {
    return [];
  }
  const name = `bwrap-ok-${digest}`;
  const paths: string[] = [];
  const runtime = runtimeDirectory(env);
  if (runtime !== undefined) paths.push(path.join(runtime, name));
  try {
    const cache =
      env.XDG_CACHE_HOME && path.isAbsolute(env.XDG_CACHE_HOME)
        ? env.XDG_CACHE_HOME
        : path.join(homedir(), ".cache");
    paths.push(path.join(cache, "harness", name));
  } catch {
    // no home directory: the runtime directory only
  }
  return paths;
}

/**
 * This user's per-boot directory for harness, made if missing: `$XDG_RUNTIME_DIR/harness`, else
 * `TMPDIR/harness-UID`. A directory in a shared place is used only when it is a real directory
 * (not a link) owned by this user and closed to everyone else; undefined otherwise.
 */
function runtimeDirectory(env: NodeJS.ProcessEnv): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const dir =
    env.XDG_RUNTIME_DIR && path.isAbsolute(env.XDG_RUNTIME_DIR)
      ? path.join(env.XDG_RUNTIME_DIR, "harness")
      : path.join(tmpdir(), `harness-${uid}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") return undefined;
  }
  try {
    const stat = lstatSync(dir);
    return stat.isDirectory() && stat.uid === uid && (stat.mode & 0o077) === 0 ? dir : undefined;
  } catch {
    return undefined;
  }
}

export function probeRemembered(memos: readonly string[]): boolean {
  return memos.some((memo) => {
    try {
      return statSync(memo).isFile();
    } catch {
      return false;
    }
  });
}

/**
 * Remember a successful probe in the first place that takes it; a failure to write the memo only
 * costs the next process a probe.
 */
export function rememberProbe(memos: readonly string[]): void {
  for (const memo of memos) {
    try {
      mkdirSync(path.dirname(memo), { recursive: true, mode: 0o700 });
      closeSync(openSync(memo, "w", 0o600));
      return;
    } catch {
      // not writable (read-only home, no home): try the next place
    }
  }
}
