import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DiskWorkspaceFs } from "../../src/workspace/disk-fs.js";

/**
 * A concurrent attacker (a process inside the workspace) keeps swapping a directory with a
 * symlink to a directory outside, while file operations run. Whatever interleaving happens, no
 * operation may read, list, stat or create anything outside: each either works on the inside
 * directory or fails. With the protection missing these tests fail within a few hundred
 * attempts; with it they cannot fail, whatever the timing.
 */

const ATTEMPTS = 1500;
const INSIDE_TEXT = "inside";
const OUTSIDE_TEXT = "OUTSIDE-SECRET".repeat(1000);

let root: string;
let workspace: string;
let outside: string;
let swapper: ChildProcess | undefined;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "harness-race-"));
  workspace = join(root, "ws");
  outside = join(root, "outside");
  await mkdir(join(workspace, "d"), { recursive: true });
  await mkdir(outside);
  await writeFile(join(workspace, "d", "f.txt"), INSIDE_TEXT);
  await writeFile(join(outside, "f.txt"), OUTSIDE_TEXT);
  await writeFile(join(outside, "outside-only.txt"), "x");
  await symlink(outside, join(workspace, "d.link"));
});

afterEach(async () => {
  swapper?.kill("SIGKILL");
  swapper = undefined;
  await rm(root, { recursive: true, force: true });
});

/** Start a process that swaps ws/d between the real directory and the symlink, forever. */
async function startSwapping(): Promise<void> {
  const script = `
    const { renameSync } = require("node:fs");
    const [d, real, link] = process.argv.slice(1);
    // A write under test may recreate d while it is away; keep swapping whatever is there.
    const move = (from, to) => { try { renameSync(from, to); } catch {} };
    process.stdout.write("ready\\n");
    for (;;) {
      move(d, real); move(link, d);
      move(d, link); move(real, d);
    }
  `;
  const child = spawn(
    process.execPath,
    ["-e", script, join(workspace, "d"), join(workspace, "d.real"), join(workspace, "d.link")],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  swapper = child;
  await new Promise<void>((resolve) => child.stdout?.once("data", () => resolve()));
}

async function outcomes<T>(operation: () => Promise<T>): Promise<{ ok: T[]; failed: number }> {
  const ok: T[] = [];
  let failed = 0;
  for (let i = 0; i < ATTEMPTS; i += 1) {
    try {
      ok.push(await operation());
    } catch {
      failed += 1;
    }
  }
  return { ok, failed };
}

describe.runIf(process.platform === "linux")(
  "a directory swapped for an outside symlink mid-operation",
  () => {
    it("readFile never returns the outside file's bytes", async () => {
      const fs = await DiskWorkspaceFs.create(workspace);
      await startSwapping();
      const { ok } = await outcomes(async () => Buffer.from(await fs.readFile("d/f.txt")).toString("utf8"));
      expect(ok.filter((text) => text !== INSIDE_TEXT)).toEqual([]);
      expect(ok.length).toBeGreaterThan(0);
    });

    it("readDir never lists the outside directory", async () => {
      const fs = await DiskWorkspaceFs.create(workspace);
      await startSwapping();
      const { ok } = await outcomes(async () => (await fs.readDir("d")).map((entry) => entry.name));
      expect(ok.filter((names) => names.includes("outside-only.txt"))).toEqual([]);
      expect(ok.filter((names) => names.includes("f.txt")).length).toBeGreaterThan(0);
    });

    it("stat never reports the outside file", async () => {
      const fs = await DiskWorkspaceFs.create(workspace);
      await startSwapping();
      const { ok } = await outcomes(async () => (await fs.stat("d/f.txt"))?.size);
      expect(ok.filter((size) => size === OUTSIDE_TEXT.length)).toEqual([]);
      expect(ok.filter((size) => size === INSIDE_TEXT.length).length).toBeGreaterThan(0);
    });

    it("writeFileAtomic never leaves a file outside, and the version check never reads outside", async () => {
      const fs = await DiskWorkspaceFs.create(workspace);
      await startSwapping();
      let i = 0;
      const { ok } = await outcomes(async () => {
        i += 1;
        await fs.writeFileAtomic(`d/new-${i}.txt`, Buffer.from("new"), { expectedVersion: null });
      });
      swapper?.kill("SIGKILL");
      expect(ok.length).toBeGreaterThan(0);
      expect((await readdir(outside)).sort()).toEqual(["f.txt", "outside-only.txt"]);
    });
  },
);
