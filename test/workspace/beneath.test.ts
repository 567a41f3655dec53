import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  BeneathError,
  beneathParts,
  lstatBeneath,
  openDirBeneath,
  openParent,
  readFileBeneath,
  readlinkBeneath,
} from "../../src/workspace/beneath.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tree() {
  const root = mkdtempSync(join(tmpdir(), "harness-beneath-"));
  const outside = mkdtempSync(join(tmpdir(), "harness-beneath-out-"));
  dirs.push(root, outside);
  mkdirSync(join(root, "a/b"), { recursive: true });
  writeFileSync(join(root, "a/b/f"), "inside");
  writeFileSync(join(outside, "f"), "outside");
  symlinkSync(outside, join(root, "out"));
  symlinkSync("a", join(root, "in"));
  symlinkSync("b/f", join(root, "a/lf"));
  return { root, outside };
}

function code(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return error instanceof BeneathError ? error.code : String(error);
  }
}

describe("reads beneath a root", () => {
  it("read a regular file through real directories only", () => {
    const { root } = tree();
    expect(readFileBeneath(root, "a/b/f").bytes.toString()).toBe("inside");
    expect(lstatBeneath(root, "a/b/f")?.isFile()).toBe(true);
    expect(openDirBeneath(root, "a/b").list()).toEqual(["f"]);
  });

  it("never follow a link, in the last component or any other, inside the root or out of it", () => {
    const { root } = tree();
    expect(code(() => readFileBeneath(root, "out/f"))).toBe("LINK_IN_PATH");
    expect(code(() => readFileBeneath(root, "in/b/f"))).toBe("LINK_IN_PATH");
    expect(code(() => readFileBeneath(root, "a/lf"))).toBe("LINK_IN_PATH");
    expect(code(() => openDirBeneath(root, "out"))).toBe("LINK_IN_PATH");
    // The link itself is seen as a link, and its target read as text.
    expect(lstatBeneath(root, "out")?.isSymbolicLink()).toBe(true);
    expect(readlinkBeneath(root, "a/lf")).toBe("b/f");
    // Below a link nothing is there.
    expect(lstatBeneath(root, "a/missing/x")).toBeUndefined();
    expect(code(() => lstatBeneath(root, "out/f"))).toBe("LINK_IN_PATH");
  });

  it("refuse what is not a plain relative path, and anything but a regular file as a file", () => {
    const { root } = tree();
    for (const bad of ["../x", "a/../../x", "/etc/passwd", "a//b", "a/./b", "a\0b"])
      expect(
        code(() => beneathParts(bad)),
        bad,
      ).toBe("INVALID_PATH");
    expect(code(() => readFileBeneath(root, "a/b"))).toBe("NOT_REGULAR");
    execFileSync("mkfifo", [join(root, "a/pipe")]);
    // A FIFO is opened without blocking and refused, never waited on.
    expect(code(() => readFileBeneath(root, "a/pipe"))).toBe("NOT_REGULAR");
    expect(code(() => readFileBeneath(root, "a/b/f", 3))).toBe("NOT_REGULAR");
  });

  it.runIf(process.platform === "linux")(
    "a held directory moved away (even out of the root) is refused: what is opened must be root/rel",
    () => {
      const { root, outside } = tree();
      const { dir, name } = openParent(root, "a/b/f");
      try {
        expect(dir.readFile(name).bytes.toString()).toBe("inside");
        renameSync(join(root, "a"), join(root, "moved"));
        expect(code(() => dir.readFile(name))).toBe("OUTSIDE");
        renameSync(join(root, "moved"), join(outside, "moved"));
        expect(code(() => dir.readFile(name))).toBe("OUTSIDE");
      } finally {
        dir.close();
      }
    },
  );
});
