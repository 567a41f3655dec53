import { execFileSync } from "node:child_process";
import { lstat, readdir, readFile, stat, symlink } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DiskWorkspaceFs } from "../../src/workspace/disk-fs.js";
import { WorkspaceError } from "../../src/workspace/fs.js";
import { REJECTED_PATHS } from "./boundary-cases.js";
import { expectWorkspaceError, readAllChunks } from "./contract.js";
import { collectFiles, createDiskFixture, type DiskFixture, utf8 } from "./fixtures.js";

let fixture: DiskFixture | undefined;
afterEach(async () => {
  await fixture?.dispose();
  fixture = undefined;
});

/** A workspace with links out of it, into it, and into .harness. */
async function withLinks(): Promise<DiskFixture> {
  fixture = await createDiskFixture({
    "real/a.txt": "inside\n",
    ".harness/journal.jsonl": "{}\n",
    "keep.txt": "keep\n",
  });
  const { root, outside } = fixture;
  await symlink(path.join(outside, "secret.txt"), path.join(root, "secret-link.txt"));
  await symlink(outside, path.join(root, "escape"), "dir");
  await symlink("../outside", path.join(root, "escape-relative"), "dir");
  await symlink(path.join(root, "real"), path.join(root, "link"), "dir");
  await symlink(".harness", path.join(root, "state"), "dir");
  await symlink(path.join(outside, "not-yet.txt"), path.join(root, "dangling-out.txt"));
  await symlink("real/created-through-link.txt", path.join(root, "dangling-in.txt"));
  await symlink("loop-b", path.join(root, "loop-a"));
  await symlink("loop-a", path.join(root, "loop-b"));
  return fixture;
}

async function outsideNames(f: DiskFixture): Promise<string[]> {
  return (await readdir(f.outside)).sort();
}

describe("DiskWorkspaceFs symlink boundary", () => {
  it("refuses a file symlink that points outside, for every operation", async () => {
    const f = await withLinks();
    for (const op of [
      () => f.fs.resolve("secret-link.txt"),
      () => f.fs.stat("secret-link.txt"),
      () => f.fs.readFile("secret-link.txt"),
      () => readAllChunks(f.fs.readChunks("secret-link.txt")),
      () => f.fs.writeFileAtomic("secret-link.txt", utf8("pwned")),
    ]) {
      await expectWorkspaceError(op(), "PATH_ESCAPE");
    }
    expect(await readFile(path.join(f.outside, "secret.txt"), "utf8")).toBe("outside secret\n");
  });

  it("refuses paths through a directory symlink that points outside", async () => {
    const f = await withLinks();
    for (const dir of ["escape", "escape-relative"]) {
      await expectWorkspaceError(f.fs.readFile(`${dir}/secret.txt`), "PATH_ESCAPE");
      await expectWorkspaceError(readAllChunks(f.fs.readChunks(`${dir}/secret.txt`)), "PATH_ESCAPE");
      await expectWorkspaceError(f.fs.writeFileAtomic(`${dir}/new.txt`, utf8("pwned")), "PATH_ESCAPE");
      await expectWorkspaceError(f.fs.writeFileAtomic(`${dir}/sub/new.txt`, utf8("pwned")), "PATH_ESCAPE");
      await expectWorkspaceError(f.fs.readDir(dir), "PATH_ESCAPE");
      await expectWorkspaceError(f.fs.glob("*.txt", { cwd: dir }), "PATH_ESCAPE");
      await expectWorkspaceError(f.fs.glob(`${dir}/*.txt`), "PATH_ESCAPE");
    }
    expect(await outsideNames(f)).toEqual(["secret.txt"]);
  });

  it("refuses writing through a dangling symlink whose target is outside", async () => {
    const f = await withLinks();
    await expectWorkspaceError(f.fs.writeFileAtomic("dangling-out.txt", utf8("pwned")), "PATH_ESCAPE");
    expect(await outsideNames(f)).toEqual(["secret.txt"]);
    expect((await lstat(path.join(f.root, "dangling-out.txt"))).isSymbolicLink()).toBe(true);
  });

  it("resolves a dangling symlink whose target is inside to that target", async () => {
    const f = await withLinks();
    expect(await f.fs.resolve("dangling-in.txt")).toBe("real/created-through-link.txt");
    await f.fs.writeFileAtomic("dangling-in.txt", utf8("made"));
    expect(await readFile(path.join(f.root, "real", "created-through-link.txt"), "utf8")).toBe("made");
  });

  it("resolves a symlink inside the workspace to the real relative path", async () => {
    const f = await withLinks();
    expect(await f.fs.resolve("link/a.txt")).toBe("real/a.txt");
    expect(await f.fs.resolve("link")).toBe("real");
    expect(await f.fs.resolve("link/new/file.txt")).toBe("real/new/file.txt");
    await f.fs.writeFileAtomic("link/b.txt", utf8("via link"));
    expect(await readFile(path.join(f.root, "real", "b.txt"), "utf8")).toBe("via link");
  });

  it("refuses writes through a symlink that leads to a protected file, and reads through it", async () => {
    fixture = await createDiskFixture({
      ".git/config": "[core]\n",
      ".git/hooks/pre-commit": "#!/bin/sh\n",
      "realgit/config": "[core]\n",
      "sub/x": "x\n",
    });
    const f = fixture;
    await symlink(".git/config", path.join(f.root, "cfg-link"));
    await symlink(".git/hooks", path.join(f.root, "hooks-link"), "dir");
    await symlink("realgit", path.join(f.root, "sub", ".git"), "dir");
    const before = await collectFiles(f.root);
    for (const input of ["cfg-link", "hooks-link/pre-commit", "hooks-link/post-merge", "sub/.git/config"]) {
      const error = await expectWorkspaceError(f.fs.writeFileAtomic(input, utf8("pwned")), "PROTECTED_PATH");
      expect(error.message).not.toContain(f.root);
    }
    expect(await collectFiles(f.root)).toEqual(before);
    expect(Buffer.from(await f.fs.readFile("cfg-link")).toString()).toBe("[core]\n");
  });

  it("refuses files a config names once they are protected, by name and through a symlink", async () => {
    fixture = await createDiskFixture({ "hooks/check.sh": "#!/bin/sh\nexit 0\n", "other.sh": "x\n" });
    const f = fixture;
    await f.fs.writeFileAtomic("hooks/check.sh", utf8("#!/bin/sh\nexit 0\n"));
    f.fs.protectFiles(["hooks/check.sh"]);
    await symlink("hooks/check.sh", path.join(f.root, "alias.sh"));
    await expectWorkspaceError(f.fs.writeFileAtomic("hooks/check.sh", utf8("pwned")), "PROTECTED_PATH");
    await expectWorkspaceError(f.fs.writeFileAtomic("HOOKS/Check.sh", utf8("pwned")), "PROTECTED_PATH");
    await expectWorkspaceError(f.fs.writeFileAtomic("alias.sh", utf8("pwned")), "PROTECTED_PATH");
    expect(await readFile(path.join(f.root, "hooks", "check.sh"), "utf8")).toBe("#!/bin/sh\nexit 0\n");
    await f.fs.writeFileAtomic("other.sh", utf8("fine"));
  });

  it("refuses a symlink into .harness as RESERVED_PATH", async () => {
    const f = await withLinks();
    const before = await collectFiles(path.join(f.root, ".harness"));
    await expectWorkspaceError(f.fs.resolve("state"), "RESERVED_PATH");
    await expectWorkspaceError(f.fs.readFile("state/journal.jsonl"), "RESERVED_PATH");
    await expectWorkspaceError(readAllChunks(f.fs.readChunks("state/journal.jsonl")), "RESERVED_PATH");
    await expectWorkspaceError(f.fs.writeFileAtomic("state/journal.jsonl", utf8("x")), "RESERVED_PATH");
    await expectWorkspaceError(f.fs.readDir("state"), "RESERVED_PATH");
    expect(await collectFiles(path.join(f.root, ".harness"))).toEqual(before);
  });

  it("reports a symlink loop as INVALID_PATH", async () => {
    const f = await withLinks();
    await expectWorkspaceError(f.fs.readFile("loop-a"), "INVALID_PATH");
    await expectWorkspaceError(readAllChunks(f.fs.readChunks("loop-a")), "INVALID_PATH");
    await expectWorkspaceError(f.fs.writeFileAtomic("loop-a", utf8("x")), "INVALID_PATH");
  });

  it("glob neither lists nor follows symlinks and never lists .harness", async () => {
    const f = await withLinks();
    expect(await f.fs.glob("**")).toEqual(["keep.txt", "real/a.txt"]);
    expect(await f.fs.glob("**/*.txt")).toEqual(["keep.txt", "real/a.txt"]);
  });

  it("glob through an inside directory symlink prefix stays inside", async () => {
    const f = await withLinks();
    expect(await f.fs.glob("link/*.txt")).toEqual(["link/a.txt"]);
  });

  it("readDir reports symlinks as symlinks", async () => {
    const f = await withLinks();
    const entries = await f.fs.readDir(".");
    expect(entries.find((entry) => entry.name === "escape")).toEqual({ name: "escape", kind: "symlink" });
    expect(entries.map((entry) => entry.name)).not.toContain(".harness");
  });
});

describe("DiskWorkspaceFs rejected writes", () => {
  it("create nothing anywhere around the workspace", async () => {
    fixture = await createDiskFixture({ "nested/keep.txt": "keep" });
    const before = await collectFiles(fixture.base);
    for (const [input, code] of REJECTED_PATHS) {
      await expect(fixture.fs.writeFileAtomic(input, utf8("pwned"))).rejects.toBeInstanceOf(WorkspaceError);
      // Below a directory, a leading "/" is just a doubled separator and .harness is not reserved.
      if (input === "" || input.startsWith("/") || code === "RESERVED_PATH") continue;
      await expect(fixture.fs.writeFileAtomic(`nested/${input}`, utf8("pwned"))).rejects.toBeInstanceOf(
        WorkspaceError,
      );
    }
    expect(await collectFiles(fixture.base)).toEqual(before);
    expect((await readdir(fixture.base)).sort()).toEqual(["outside", "ws"]);
    expect(await readdir(path.join(fixture.root, "nested"))).toEqual(["keep.txt"]);
  });
});

describe("DiskWorkspaceFs writes", () => {
  it("leaves no temp files and fsyncs into place", async () => {
    fixture = await createDiskFixture({ "dir/a.txt": "one" });
    for (let i = 0; i < 5; i++) await fixture.fs.writeFileAtomic("dir/a.txt", utf8(`v${i}`));
    expect(await readdir(path.join(fixture.root, "dir"))).toEqual(["a.txt"]);
    expect(await readFile(path.join(fixture.root, "dir", "a.txt"), "utf8")).toBe("v4");
  });

  it("removes the temp file and keeps the target when the version is stale", async () => {
    fixture = await createDiskFixture({ "a.txt": "one" });
    await expectWorkspaceError(
      fixture.fs.writeFileAtomic("a.txt", utf8("two"), { expectedVersion: "0".repeat(64) }),
      "STALE_VERSION",
    );
    // The reserved directory holds the (released) per-file write locks.
    expect((await readdir(fixture.root)).sort()).toEqual([".harness", "a.txt"]);
    expect(await readdir(path.join(fixture.root, ".harness", "locks"))).toEqual([]);
    expect(await readFile(path.join(fixture.root, "a.txt"), "utf8")).toBe("one");
  });

  it("gives new files the usual creation mode", async () => {
    fixture = await createDiskFixture();
    await fixture.fs.writeFileAtomic("new.txt", utf8("x"));
    const umask = process.umask();
    expect((await stat(path.join(fixture.root, "new.txt"))).mode & 0o777).toBe(0o666 & ~umask);
  });

  it("refuses a FIFO as not a regular file instead of blocking on it", async () => {
    fixture = await createDiskFixture();
    execFileSync("mkfifo", [path.join(fixture.root, "pipe")]);
    await expectWorkspaceError(fixture.fs.readFile("pipe"), "INVALID_PATH");
    await expectWorkspaceError(readAllChunks(fixture.fs.readChunks("pipe")), "INVALID_PATH");
    await expectWorkspaceError(fixture.fs.writeFileAtomic("pipe", utf8("x")), "INVALID_PATH");
    expect(await fixture.fs.stat("pipe")).toMatchObject({ kind: "other" });
    expect(await fixture.fs.glob("*")).toEqual([]);
  });
});

describe("DiskWorkspaceFs.create", () => {
  it("requires an absolute, existing directory and never echoes the host path", async () => {
    await expect(DiskWorkspaceFs.create("relative/dir")).rejects.toBeInstanceOf(TypeError);
    fixture = await createDiskFixture({ "file.txt": "x" });
    const missing = path.join(fixture.base, "missing");
    const error = await DiskWorkspaceFs.create(missing).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WorkspaceError);
    expect((error as WorkspaceError).code).toBe("NOT_FOUND");
    expect((error as WorkspaceError).message).not.toContain(fixture.base);
    await expectWorkspaceError(
      DiskWorkspaceFs.create(path.join(fixture.root, "file.txt")),
      "NOT_A_DIRECTORY",
    );
  });

  it("realpaths the root once, so a root reached through a symlink works", async () => {
    fixture = await createDiskFixture({ "a.txt": "x" });
    await symlink(fixture.root, path.join(fixture.base, "alias"), "dir");
    const fs = await DiskWorkspaceFs.create(path.join(fixture.base, "alias"));
    expect(fs.hostRoot).toBe(fixture.root);
    expect(fs.label).toBe("ws");
    expect(await fs.glob("*")).toEqual(["a.txt"]);
  });
});
