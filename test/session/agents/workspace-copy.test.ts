import { execFileSync } from "node:child_process";
import {
  appendFileSync,
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { copyWorkspace, WorkspaceCopyError } from "../../../src/session/agents/workspace-copy.js";
import { manifestJson } from "../../../src/workspace/manifest.js";
import { TreeSnapshot } from "../../../src/workspace/tree-snapshot.js";

const temps: string[] = [];
afterEach(() => {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function temp(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "harness-agents-copy-"));
  temps.push(dir);
  return dir;
}

/** A workspace with untracked and dot files, a .git, harness state, an exec script and links. */
function workspace(): { source: string; outside: string } {
  const base = temp();
  const source = path.join(base, "ws");
  const outside = path.join(base, "outside");
  mkdirSync(outside);
  writeFileSync(path.join(outside, "secret.txt"), "outside secret\n");
  mkdirSync(path.join(source, "src", "deep", "er"), { recursive: true });
  mkdirSync(path.join(source, "empty"));
  mkdirSync(path.join(source, ".git", "refs"), { recursive: true });
  mkdirSync(path.join(source, ".harness", "sessions"), { recursive: true });
  writeFileSync(path.join(source, ".harness", "sessions", "journal"), "parent's journal\n");
  writeFileSync(path.join(source, ".git", "HEAD"), "ref: refs/heads/main\n");
  writeFileSync(path.join(source, ".env"), "TOKEN=1\n");
  writeFileSync(path.join(source, "untracked.txt"), "not in git\n");
  writeFileSync(path.join(source, "src", "a.ts"), "export const a = 1;\n");
  writeFileSync(path.join(source, "src", "deep", "er", "b.bin"), Buffer.from([0, 1, 2, 255]));
  writeFileSync(path.join(source, "run.sh"), "#!/bin/sh\necho hi\n");
  chmodSync(path.join(source, "run.sh"), 0o755);
  symlinkSync(path.join(outside, "secret.txt"), path.join(source, "escape"));
  symlinkSync("../outside", path.join(source, "escape-dir"));
  symlinkSync("src/a.ts", path.join(source, "inside-link"));
  execFileSync("mkfifo", [path.join(source, "pipe")]);
  return { source, outside };
}

describe("copyWorkspace", () => {
  it("copies untracked, dot and .git files, leaves out .harness, FIFOs, and keeps exec bits", async () => {
    const { source } = workspace();
    const destination = path.join(temp(), "copies", "child-1");
    const copy = await copyWorkspace(source, destination);

    expect(copy.root).toBe(destination);
    expect(statSync(destination).mode & 0o777).toBe(0o700);
    expect(readFileSync(path.join(destination, ".env"), "utf8")).toBe("TOKEN=1\n");
    expect(readFileSync(path.join(destination, "untracked.txt"), "utf8")).toBe("not in git\n");
    expect(readFileSync(path.join(destination, ".git", "HEAD"), "utf8")).toBe("ref: refs/heads/main\n");
    expect(readFileSync(path.join(destination, "src", "deep", "er", "b.bin"))).toEqual(
      Buffer.from([0, 1, 2, 255]),
    );
    expect(statSync(path.join(destination, "empty")).isDirectory()).toBe(true);
    expect(statSync(path.join(destination, "run.sh")).mode & 0o111).toBe(0o111);
    expect(statSync(path.join(destination, "untracked.txt")).mode & 0o111).toBe(0);
    // The parent's state is not copied; what is there now is the copy's own (its snapshot state).
    expect(existsSync(path.join(destination, ".harness", "sessions"))).toBe(false);
    expect(existsSync(path.join(destination, "pipe"))).toBe(false);
    expect(copy.skipped).toEqual(["pipe"]);
    expect(copy.files).toBe(6);
    expect(copy.mechanism === "reflink" || copy.mechanism === "copy").toBe(true);
  });

  it("copies a link pointing outside as a link, never following it", async () => {
    const { source, outside } = workspace();
    const destination = path.join(temp(), "child");
    const copy = await copyWorkspace(source, destination);

    expect(lstatSync(path.join(destination, "escape")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(destination, "escape"))).toBe(path.join(outside, "secret.txt"));
    expect(lstatSync(path.join(destination, "escape-dir")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(destination, "escape-dir"))).toBe("../outside");
    // Nothing of what the links point to was copied into the tree.
    expect(copy.files).toBe(6);
    expect(copy.base.get("escape")).toEqual({ link: path.join(outside, "secret.txt") });
    expect(copy.base.get("inside-link")).toEqual({ link: "src/a.ts" });
    expect([...copy.base.keys()].some((p) => p.startsWith("escape-dir/"))).toBe(false);
  });

  it("an in-place append in the copy leaves the parent's file, bytes and inode, unchanged", async () => {
    const { source } = workspace();
    const destination = path.join(temp(), "child");
    await copyWorkspace(source, destination);
    const parentFile = path.join(source, "src", "a.ts");
    const before = statSync(parentFile);

    appendFileSync(path.join(destination, "src", "a.ts"), "x\n");
    // As a shell would: `echo x >> f` opens the same inode and appends.
    execFileSync("sh", ["-c", "echo y >> src/a.ts"], { cwd: destination });

    const after = statSync(parentFile);
    expect(readFileSync(parentFile, "utf8")).toBe("export const a = 1;\n");
    expect(after.ino).toBe(before.ino);
    expect(after.size).toBe(before.size);
    expect(after.nlink).toBe(1);
    expect(statSync(path.join(destination, "src", "a.ts")).ino).not.toBe(before.ino);
    expect(readFileSync(path.join(destination, "src", "a.ts"), "utf8")).toBe("export const a = 1;\nx\ny\n");
  });

  it("base equals a fresh manifest of the copy, and describes the copy, not the source", async () => {
    const { source } = workspace();
    const destination = path.join(temp(), "child");
    const copy = await copyWorkspace(source, destination);
    // The parent changes after the copy: the base must not follow.
    writeFileSync(path.join(source, "src", "a.ts"), "changed in the parent\n");

    const fresh = await new TreeSnapshot({
      root: destination,
      stateDir: path.join(temp(), "state"),
      watch: false,
    }).snapshot({ full: true });
    expect(manifestJson(copy.base)).toBe(manifestJson(fresh));
    expect(copy.base.has(".git/HEAD")).toBe(false); // the record leaves the root's .git out
    expect(copy.base.get("empty")).toEqual({ dir: true });
    expect(copy.base.get("run.sh")).toMatchObject({ exec: true });
    expect([...copy.base.keys()].some((p) => p.startsWith(".harness"))).toBe(false);
  });

  it("refuses an existing destination and a copy into the source, leaving nothing behind", async () => {
    const { source } = workspace();
    const existing = temp();
    await expect(copyWorkspace(source, existing)).rejects.toBeInstanceOf(WorkspaceCopyError);
    expect(existsSync(existing)).toBe(true);
    const inside = path.join(source, "nested", "copy");
    await expect(copyWorkspace(source, inside)).rejects.toBeInstanceOf(WorkspaceCopyError);
    expect(existsSync(path.join(source, "nested"))).toBe(false);
  });

  it("an aborted copy removes what it made", async () => {
    const { source } = workspace();
    const destination = path.join(temp(), "child");
    const controller = new AbortController();
    controller.abort();
    await expect(copyWorkspace(source, destination, { signal: controller.signal })).rejects.toThrow();
    expect(existsSync(destination)).toBe(false);
  });
});
