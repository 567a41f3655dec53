import { spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BwrapSandbox } from "../../src/sandbox/bwrap.js";
import { Executor } from "../../src/sandbox/executor.js";
import { liveGroupMembers } from "../../src/sandbox/proc.js";
import { processGroupTree, terminateTree } from "../../src/sandbox/tree.js";
import { dirsPerTest } from "../shell/helpers.js";

const dirs = dirsPerTest("tree");

/** Live host pids whose pid namespace is `namespace` (`pid:[…]`); a zombie holds nothing. */
function inPidNamespace(namespace: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readlinkSync(`/proc/${name}/ns/pid`) !== namespace) continue;
      const state = /^State:\s+(\S)/m.exec(readFileSync(`/proc/${name}/status`, "utf8"))?.[1];
      if (state !== "Z" && state !== "X") pids.push(Number(name));
    } catch {
      // gone
    }
  }
  return pids;
}

describe("a command's process tree", () => {
  it("a process group is listed while it has members and is empty once its last member is gone", async () => {
    const child = spawn("/bin/sh", ["-c", "sleep 30 & sleep 30 & wait"], { detached: true, stdio: "ignore" });
    const pgid = child.pid!;
    await new Promise((resolve) => child.once("spawn", resolve));
    const exited = new Promise((resolve) => child.once("exit", resolve));
    // The shell and its two sleeps, once the shell has forked them.
    let members = liveGroupMembers(pgid);
    for (let i = 0; i < 100 && members.length < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      members = liveGroupMembers(pgid);
    }
    expect(members.map((stat) => stat.pid)).toContain(pgid);
    expect(members.length).toBe(3);
    expect(await terminateTree(processGroupTree(pgid), 2_000)).toBe(3);
    await exited;
    expect(liveGroupMembers(pgid)).toEqual([]);
    expect(processGroupTree(pgid).members()).toEqual([]);
  });

  it("a sandboxed command's background processes are gone when it returns, setsid ones included", async () => {
    const executor = new Executor({ environment: { PATH: "/usr/local/bin:/usr/bin:/bin" } });
    const result = await executor.execute({
      purpose: "shell",
      argv: ["/bin/sh", "-c", "setsid sleep 60 & sleep 60 & readlink /proc/self/ns/pid"],
      workspace: dirs.workspace,
      profile: { sandbox: new BwrapSandbox("workspace-write"), env: {} },
      timeoutMs: 20_000,
    });
    expect(result.exitCode).toBe(0);
    const namespace = result.stdout.head.trim();
    expect(namespace).toMatch(/^pid:\[\d+\]$/);
    expect(namespace).not.toBe(readlinkSync("/proc/self/ns/pid"));
    expect(inPidNamespace(namespace)).toEqual([]);
  });
});
