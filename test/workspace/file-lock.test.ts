import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resultFromThrown } from "../../src/runtime/result.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { createReadFileTool } from "../../src/tools/files/read-file.js";
import { createWriteFileTool } from "../../src/tools/files/write-file.js";
import { DiskWorkspaceFs } from "../../src/workspace/disk-fs.js";
import { FileLockDirectoryError, FileLockTimeout, withFileLock } from "../../src/workspace/file-lock.js";
import { versionOf } from "../../src/workspace/version.js";
import { deadPid } from "../support/processes.js";
import { Session } from "../tools/helpers.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "harness-lock-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const locks = () => path.join(dir, ".harness", "locks");
const lockFile = (key: string) => path.join(locks(), `${sha256Hex(key)}.lock`);

/** A pid that existed and is gone now. */

describe("per-file write lock", () => {
  it("is released when the action throws, and the lock directory is left empty", async () => {
    await expect(
      withFileLock(locks(), "a.txt", async () => {
        expect(await readdir(locks())).toHaveLength(1);
        throw new Error("handler failed");
      }),
    ).rejects.toThrow("handler failed");
    expect(await readdir(locks())).toEqual([]);
  });

  it("serializes actions on one key within a process", async () => {
    const order: string[] = [];
    const slow = (name: string) =>
      withFileLock(locks(), "same.txt", async () => {
        order.push(`${name} in`);
        await new Promise((resolve) => setTimeout(resolve, 20));
        order.push(`${name} out`);
      });
    await Promise.all([slow("a"), slow("b")]);
    expect(order).toEqual(["a in", "a out", "b in", "b out"]);
  });

  it("waits for a live holder and gives up after the timeout, leaving its lock alone", async () => {
    await mkdir(locks(), { recursive: true });
    // The test process itself is alive: its lock must never be broken.
    const live = JSON.stringify({ pid: process.pid, host: hostname(), proc_start: null, nonce: "live" });
    await writeFile(lockFile("b.txt"), live);
    let ran = false;
    await expect(
      withFileLock(
        locks(),
        "b.txt",
        async () => {
          ran = true;
        },
        { timeoutMs: 150 },
      ),
    ).rejects.toBeInstanceOf(FileLockTimeout);
    expect(ran).toBe(false);
    expect(await readFile(lockFile("b.txt"), "utf8")).toBe(live);
  });

  it("breaks a lock whose owner is gone (a crashed writer) and takes it", async () => {
    await mkdir(locks(), { recursive: true });
    const stale = JSON.stringify({ pid: await deadPid(), host: hostname(), proc_start: "1", nonce: "dead" });
    await writeFile(lockFile("c.txt"), stale);
    let ran = false;
    await withFileLock(
      locks(),
      "c.txt",
      async () => {
        ran = true;
        expect(await readFile(lockFile("c.txt"), "utf8")).not.toBe(stale);
      },
      { timeoutMs: 1000 },
    );
    expect(ran).toBe(true);
    expect(await readdir(locks())).toEqual([]);
  });

  it("never breaks a lock from another host or one it cannot read", async () => {
    await mkdir(locks(), { recursive: true });
    const foreign = JSON.stringify({
      pid: await deadPid(),
      host: `${hostname()}-other`,
      proc_start: null,
      nonce: "x",
    });
    await writeFile(lockFile("d.txt"), foreign);
    await writeFile(lockFile("e.txt"), "not a lock");
    for (const key of ["d.txt", "e.txt"]) {
      await expect(
        withFileLock(locks(), key, async () => undefined, { timeoutMs: 100 }),
      ).rejects.toBeInstanceOf(FileLockTimeout);
    }
  });

  it("refuses a symlink planted in place of the lock directory", async () => {
    const elsewhere = await mkdtemp(path.join(tmpdir(), "harness-lock-target-"));
    try {
      await mkdir(path.join(dir, ".harness"));
      await symlink(elsewhere, locks());
      await expect(withFileLock(locks(), "f.txt", async () => undefined)).rejects.toBeInstanceOf(
        FileLockDirectoryError,
      );
      expect(await readdir(elsewhere)).toEqual([]);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });
});

describe("DiskWorkspaceFs writes under the lock", () => {
  it("a write after a crashed writer's stale lock succeeds and releases the lock", async () => {
    const fs = await DiskWorkspaceFs.create(dir);
    await fs.writeFileAtomic("g.txt", new TextEncoder().encode("one"));
    await mkdir(locks(), { recursive: true });
    const stale = JSON.stringify({ pid: await deadPid(), host: hostname(), proc_start: "1", nonce: "dead" });
    await writeFile(lockFile("g.txt"), stale);
    await fs.writeFileAtomic("g.txt", new TextEncoder().encode("two"), {
      expectedVersion: versionOf(new TextEncoder().encode("one")),
    });
    expect(await readFile(path.join(dir, "g.txt"), "utf8")).toBe("two");
    expect(await readdir(locks())).toEqual([]);
  });

  it("a STALE_VERSION refusal releases the lock and leaves no temporary file", async () => {
    const fs = await DiskWorkspaceFs.create(dir);
    await fs.writeFileAtomic("h.txt", new TextEncoder().encode("now"));
    await expect(
      fs.writeFileAtomic("h.txt", new TextEncoder().encode("late"), { expectedVersion: "0".repeat(64) }),
    ).rejects.toMatchObject({ code: "STALE_VERSION" });
    expect(await readdir(locks())).toEqual([]);
    expect((await readdir(dir)).sort()).toEqual([".harness", "h.txt"]);
    expect(await readFile(path.join(dir, "h.txt"), "utf8")).toBe("now");
  });

  it("with .harness replaced by a symlink, a write is refused (IO_ERROR) and nothing is created where it points", async () => {
    const elsewhere = await mkdtemp(path.join(tmpdir(), "harness-lock-target-"));
    try {
      await writeFile(path.join(dir, "j.txt"), "before");
      await symlink(elsewhere, path.join(dir, ".harness"));
      const fs = await DiskWorkspaceFs.create(dir);
      await expect(fs.writeFileAtomic("j.txt", new TextEncoder().encode("after"))).rejects.toMatchObject({
        code: "IO_ERROR",
      });
      expect(await readFile(path.join(dir, "j.txt"), "utf8")).toBe("before");
      expect(await readdir(elsewhere)).toEqual([]);
      expect((await readdir(dir)).sort()).toEqual([".harness", "j.txt"]);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it("a write that times out waiting for another writer's lock is FILE_BUSY: retryable, nothing applied", async () => {
    await writeFile(path.join(dir, "busy.txt"), "before");
    const fs = await DiskWorkspaceFs.create(dir, { writeLockTimeoutMs: 50 });
    const session = new Session(fs);
    await session.run(createReadFileTool(), { path: "busy.txt" });
    let releaseHolder!: () => void;
    const holderMayRelease = new Promise<void>((resolve) => {
      releaseHolder = resolve;
    });
    let holding!: () => void;
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    // Another writer holds busy.txt's lock (a live owner: this very process) until told to stop.
    const holder = withFileLock(locks(), "busy.txt", async () => {
      holding();
      await holderMayRelease;
    });
    try {
      await held;
      const direct = await fs
        .writeFileAtomic("busy.txt", new TextEncoder().encode("after"))
        .catch((caught: unknown) => caught);
      expect(direct).toMatchObject({ code: "FILE_BUSY", path: "busy.txt" });
      expect((direct as Error).message).toContain("nothing was written");

      // Only busy.txt's lock is held: another file is written meanwhile.
      await session.run(createWriteFileTool(), { path: "new.txt", content: "x" });
      const failed = await session.fail(
        createWriteFileTool(),
        { path: "busy.txt", content: "after" },
        "FILE_BUSY",
      );
      expect(resultFromThrown({ call_id: "w", name: "write_file" }, failed, 0)).toMatchObject({
        status: "error",
        error_type: "FILE_BUSY",
        retryable: true,
        operation_applied: false,
        hint: expect.stringContaining("nothing was written"),
      });
      expect(await readFile(path.join(dir, "busy.txt"), "utf8")).toBe("before");
      // No temporary file left beside it.
      expect((await readdir(dir)).sort()).toEqual([".harness", "busy.txt", "new.txt"]);
    } finally {
      releaseHolder();
      await holder;
    }
    // Once the holder is done, the same call succeeds.
    await session.run(createWriteFileTool(), { path: "busy.txt", content: "after" });
    expect(await readFile(path.join(dir, "busy.txt"), "utf8")).toBe("after");
  });

  it("the lock directory is never visible through the workspace", async () => {
    const fs = await DiskWorkspaceFs.create(dir);
    await fs.writeFileAtomic("i.txt", new TextEncoder().encode("x"));
    expect((await fs.readDir(".")).map((e) => e.name)).toEqual(["i.txt"]);
    expect(await fs.glob("**/*")).toEqual(["i.txt"]);
    await expect(fs.readDir(".harness/locks")).rejects.toMatchObject({ code: "RESERVED_PATH" });
  });
});
