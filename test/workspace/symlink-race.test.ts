import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DiskWorkspaceFs } from "../../src/workspace/disk-fs.js";
import { withFileLock } from "../../src/workspace/file-lock.js";
import { versionOf } from "../../src/workspace/version.js";

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

    it("readChunks never yields the outside file's bytes", async () => {
      const fs = await DiskWorkspaceFs.create(workspace);
      await startSwapping();
      const { ok } = await outcomes(async () => {
        let read = "";
        for await (const chunk of fs.readChunks("d/f.txt", { chunkBytes: 3 }))
          read += Buffer.from(chunk).toString();
        return read;
      });
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

    it("a write whose parent is swapped while it waits cannot rename its file into another directory", async () => {
      // Deterministic version of the race: the write is held at its lock (as by another writer)
      // after creating its temporary file; meanwhile the attacker moves that file into the
      // directory of a protected hook script (the directory is writable, only the script is
      // protected) and swaps the write's parent for a symlink to it. A rename that resolved its
      // paths again would replace the hook with the model's bytes, and the version check would
      // read the hook through the symlink and agree.
      await mkdir(join(workspace, "hooks"));
      const hook = join(workspace, "hooks", "pre.mjs");
      await writeFile(hook, "export default () => 'original';");
      const fs = await DiskWorkspaceFs.create(workspace);
      fs.protectFiles(["hooks/pre.mjs"]);
      const hookVersion = versionOf(await readFile(hook));

      let release = (): void => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let locked = (): void => undefined;
      const lockTaken = new Promise<void>((resolve) => {
        locked = resolve;
      });
      const holder = withFileLock(join(workspace, ".harness", "locks"), "d/pre.mjs", async () => {
        locked();
        await held;
      });
      await lockTaken;
      const write = fs
        .writeFileAtomic("d/pre.mjs", Buffer.from("evil"), { expectedVersion: hookVersion })
        .then(
          () => "written",
          (error: unknown) => (error as { code?: string }).code ?? "error",
        );
      let temp: string | undefined;
      for (let i = 0; i < 500 && temp === undefined; i += 1) {
        temp = (await readdir(join(workspace, "d"))).find((name) => name.endsWith(".tmp"));
        if (temp === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(temp).toBeDefined();
      await rename(join(workspace, "d", temp as string), join(workspace, "hooks", temp as string));
      await rename(join(workspace, "d"), join(workspace, "d.real"));
      await symlink("hooks", join(workspace, "d"));
      release();
      await holder;

      expect(await write).not.toBe("written");
      expect(await readFile(hook, "utf8")).toBe("export default () => 'original';");
      expect(await readdir(join(workspace, "d.real"))).toEqual(["f.txt"]);
    });
  },
);
