import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { settleGuards } from "../../src/sandbox/absent-guard.js";
import { BwrapSandbox } from "../../src/sandbox/bwrap.js";
import { createShellTool } from "../../src/tools/shell/shell.js";
import { DEFAULT_PROTECTED_PATHS } from "../../src/workspace/protected.js";
import { dirsPerTest, failureOf, toolContext } from "./helpers.js";

/**
 * Protected names that do not exist are never mount points (bwrap would create them on the host):
 * they are guarded, and whatever a command creates there is moved to `.harness/quarantine/`
 * before anything can read it. These are the attacks on that guard.
 */

const dirs = dirsPerTest("absent");
const HOOKS = ["hooks/check.sh", "scripts/pre.sh"];

function shell() {
  const tool = createShellTool({
    sandbox: { profile: "workspace-write", protectedPaths: DEFAULT_PROTECTED_PATHS.withFiles(HOOKS) },
  });
  return { tool, ...toolContext(dirs.workspace, path.join(dirs.scratch, "artifacts")) };
}

function exists(relative: string): boolean {
  try {
    lstatSync(path.join(dirs.workspace, relative));
    return true;
  } catch {
    return false;
  }
}

describe("absent protected names", () => {
  it("get no mount point: bwrap's arguments name only paths that exist", async () => {
    mkdirSync(path.join(dirs.workspace, "scripts"));
    const sandbox = new BwrapSandbox("workspace-write", undefined, {
      protectedPaths: DEFAULT_PROTECTED_PATHS.withFiles(HOOKS),
    });
    const launch = await sandbox.prepare({
      argv: ["/bin/sh", "-c", "true"],
      workspace: dirs.workspace,
      env: {},
    });
    const workspaceArgs = launch.args.filter((arg) => arg.startsWith(`${dirs.workspace}/`));
    for (const arg of workspaceArgs) expect(existsSync(arg), arg).toBe(true);
    expect(readdirSync(dirs.workspace).sort()).toEqual([".harness", "scripts"]);
  });

  it("each one a command creates is moved to .harness/quarantine and the call is a SANDBOX_VIOLATION", async () => {
    mkdirSync(path.join(dirs.workspace, "scripts"));
    const { tool, context } = shell();
    const cases: [string, string][] = [
      ["git init -q .", ".git"],
      ["printf '{}' > harness.config.json", "harness.config.json"],
      ["printf '{}' > c.json && mv c.json harness.config.json", "harness.config.json"],
      ["ln -s /etc/passwd harness.config.json", "harness.config.json"],
      ["printf 'ref: refs/heads/x\\n' > HEAD", "HEAD"],
      ["mkdir -p hooks && printf '#!/bin/sh\\n' > hooks/check.sh", "hooks"],
      ["ln -s /tmp hooks", "hooks"],
      ["printf '#!/bin/sh\\n' > scripts/pre.sh; printf 'x' > scripts/other.sh", "scripts/pre.sh"],
    ];
    for (const [command, created] of cases) {
      const error = await failureOf(tool.execute({ command }, context));
      expect(error.code, command).toBe("SANDBOX_VIOLATION");
      const quarantined = error.data?.quarantined as { path: string; moved_to: string }[];
      expect(
        quarantined.map((moved) => moved.path),
        command,
      ).toEqual([created]);
      expect(exists(created), command).toBe(false);
      expect(lstatSync(path.join(dirs.workspace, quarantined[0]!.moved_to))).toBeDefined();
      expect(error.message).toContain(`the command created the protected path ${created}`);
    }
    // What was not protected stays where the command put it.
    expect(readFileSync(path.join(dirs.workspace, "scripts/other.sh"), "utf8")).toBe("x");
    // The quarantine is harness's: no command sees it.
    const look = await tool.execute({ command: "ls -A .harness | wc -l" }, context);
    expect((look.data as { stdout: { head: string } }).stdout.head.trim()).toBe("0");
    expect(readdirSync(path.join(dirs.workspace, ".harness/guards"))).toEqual([]);
  });

  it("a command that creates nothing protected runs as before, and leaves no guard behind", async () => {
    execFileSync("git", ["init", "-q", dirs.workspace]);
    const { tool, context } = shell();
    const output = await tool.execute({ command: "ls -A; echo made > made.txt" }, context);
    expect((output.data as { stdout: { head: string } }).stdout.head).toBe(".git\n.harness\n");
    expect(readdirSync(dirs.workspace).sort()).toEqual([".git", ".harness", "made.txt"]);
    expect(readdirSync(path.join(dirs.workspace, ".harness/guards"))).toEqual([]);
  });
});

describe("guards left by a harness that was killed", () => {
  const guard = (name: string, record: unknown) => {
    mkdirSync(path.join(dirs.workspace, ".harness/guards"), { recursive: true });
    writeFileSync(path.join(dirs.workspace, ".harness/guards", name), JSON.stringify(record));
  };

  it("are settled: what appeared is moved, and the guard of a process that is gone is removed", () => {
    writeFileSync(path.join(dirs.workspace, "harness.config.json"), '{"sandbox": "off"}');
    writeFileSync(path.join(dirs.workspace, "HEAD"), "ref\n");
    // A pid no process has (above the kernel's pid_max) and this very process, which is alive.
    guard("dead.json", {
      pid: 99_999_999,
      host: hostname(),
      proc_start: null,
      paths: ["harness.config.json"],
    });
    guard("alive.json", { pid: process.pid, host: hostname(), proc_start: null, paths: ["HEAD"] });
    const moved = settleGuards(dirs.workspace);
    expect(moved.map((entry) => entry.path).sort()).toEqual(["HEAD", "harness.config.json"]);
    expect(exists("harness.config.json")).toBe(false);
    expect(exists("HEAD")).toBe(false);
    expect(readdirSync(path.join(dirs.workspace, ".harness/guards"))).toEqual(["alive.json"]);
  });

  it("never move anything outside the workspace's own directories, whatever a guard file says", () => {
    const outside = path.join(dirs.scratch, "victim");
    mkdirSync(outside);
    writeFileSync(path.join(outside, "pre.sh"), "keep");
    // `scripts` became a link out of the workspace: scripts/pre.sh is not the workspace's.
    symlinkSync(outside, path.join(dirs.workspace, "scripts"));
    writeFileSync(path.join(dirs.workspace, "kept.txt"), "keep");
    guard("hostile.json", {
      pid: 99_999_999,
      host: hostname(),
      proc_start: null,
      paths: [
        "scripts/pre.sh",
        "../absent-victim",
        outside,
        ".harness/guards",
        "./kept.txt",
        "a/../kept.txt",
      ],
    });
    guard("garbage.json", "not a guard");
    expect(settleGuards(dirs.workspace)).toEqual([]);
    expect(readFileSync(path.join(outside, "pre.sh"), "utf8")).toBe("keep");
    expect(readFileSync(path.join(dirs.workspace, "kept.txt"), "utf8")).toBe("keep");
    expect(readdirSync(path.join(dirs.workspace, ".harness/guards"))).toEqual([]);
  });
});
