import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { probeMemoPaths, probeRemembered, rememberProbe } from "../../src/sandbox/probe-memo.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function scratch(): { root: string; binary: string; env: NodeJS.ProcessEnv } {
  const root = mkdtempSync(join(tmpdir(), "probe-memo-"));
  dirs.push(root);
  const binary = join(root, "bwrap");
  writeFileSync(binary, "#!/bin/sh\n");
  mkdirSync(join(root, "run"), { mode: 0o700 });
  return { root, binary, env: { XDG_RUNTIME_DIR: join(root, "run"), XDG_CACHE_HOME: join(root, "cache-a") } };
}

describe("the bwrap probe memo", () => {
  it("is kept first in the per-boot runtime directory, so a process with another home finds it", () => {
    const { root, binary, env } = scratch();
    const first = probeMemoPaths(binary, env);
    expect(first[0]?.startsWith(join(root, "run", "harness"))).toBe(true);
    expect(statSync(join(root, "run", "harness")).mode & 0o777).toBe(0o700);
    expect(probeRemembered(first)).toBe(false);
    rememberProbe(first);
    expect(statSync(first[0]!).isFile()).toBe(true);
    // Another cache home (a fresh $HOME): the runtime directory still answers.
    const other = probeMemoPaths(binary, { ...env, XDG_CACHE_HOME: join(root, "cache-b") });
    expect(probeRemembered(other)).toBe(true);
    // Without it, only the cache directory: nothing remembered there.
    expect(probeRemembered(other.slice(1))).toBe(false);
  });

  it("is another memo for another bwrap binary (changed mtime)", () => {
    const { binary, env } = scratch();
    rememberProbe(probeMemoPaths(binary, env));
    expect(probeRemembered(probeMemoPaths(binary, env))).toBe(true);
    utimesSync(binary, new Date(2001, 1, 1), new Date(2001, 1, 1));
    expect(probeRemembered(probeMemoPaths(binary, env))).toBe(false);
  });

  it("never uses a runtime directory others can write to, or a link", () => {
    const { root, binary, env } = scratch();
    const shared = join(root, "run", "harness");
    mkdirSync(shared, { mode: 0o700 });
    chmodSync(shared, 0o777);
    rememberProbe(probeMemoPaths(binary, env));
    const paths = probeMemoPaths(binary, env);
    expect(paths.every((path) => !path.startsWith(shared))).toBe(true);
    // The memo went to the cache directory instead.
    expect(paths[0]?.startsWith(join(root, "cache-a"))).toBe(true);
    expect(probeRemembered(paths)).toBe(true);

    const linked = join(root, "run2");
    mkdirSync(linked, { mode: 0o700 });
    symlinkSync(join(root, "elsewhere"), join(linked, "harness"));
    mkdirSync(join(root, "elsewhere"), { mode: 0o700 });
    const viaLink = probeMemoPaths(binary, { ...env, XDG_RUNTIME_DIR: linked });
    expect(viaLink.every((path) => !path.startsWith(join(linked, "harness")))).toBe(true);
  });

  it("is nowhere for a binary that does not exist", () => {
    const { root, env } = scratch();
    expect(probeMemoPaths(join(root, "missing"), env)).toEqual([]);
  });
});
