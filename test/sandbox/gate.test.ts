import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { BwrapSandbox } from "../../src/sandbox/bwrap.js";

/*
 * bwrap arms --die-with-parent only after it has set up its namespaces, just before it answers on
 * --info-fd; a harness killed before then would leave the command running. The command waits on
 * a pipe harness writes only after reading that answer: here nothing is ever written (the pipe
 * closes as a dead harness's would) and the command must never run.
 */

const root = mkdtempSync(path.join(tmpdir(), "harness-gate-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function launched(
  marker: string,
  write: (gate: Writable) => void,
  argv: readonly string[] = ["/bin/sh", "-c", `echo ran > ${marker}`],
) {
  const launch = await new BwrapSandbox("workspace-write").prepare({
    argv,
    workspace: root,
    env: { PATH: "/usr/bin:/bin" },
  });
  const child = spawn(launch.file, launch.args, {
    cwd: launch.cwd,
    env: launch.env,
    stdio: ["ignore", "pipe", "pipe", ...Array.from({ length: launch.extraPipes }, () => "pipe" as const)],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  (child.stdio[3] as Readable).resume();
  write(child.stdio[4] as Writable);
  return exited;
}

describe("the sandbox's start gate", () => {
  it("a closed gate (harness gone before bwrap armed) runs nothing", async () => {
    const marker = path.join(root, "closed.txt");
    const code = await launched(marker, (gate) => gate.end());
    expect(code).toBe(125);
    expect(existsSync(marker)).toBe(false);
  });

  it("an opened gate runs the command", async () => {
    const marker = path.join(root, "opened.txt");
    const code = await launched(marker, (gate) => gate.end("\n"));
    expect(code).toBe(0);
    expect(existsSync(marker)).toBe(true);
  });

  it("a program whose -c is not a shell's (perl -c: check syntax) is gated by /bin/sh and runs as asked", async () => {
    const code = await launched(path.join(root, "unused"), (gate) => gate.end("\n"), [
      "/usr/bin/perl",
      "-c",
      "-e",
      "1",
    ]);
    expect(code).toBe(0);
  });
});
