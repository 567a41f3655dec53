import { realpath, symlink } from "node:fs/promises";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lexicalParts } from "../../src/workspace/boundary.js";
import { WorkspaceError } from "../../src/workspace/fs.js";
import { MemoryWorkspaceFs } from "../../src/workspace/memory-fs.js";
import { createDiskFixture, type DiskFixture } from "./fixtures.js";

const COMPONENTS = [
  "..",
  ".",
  "",
  "a",
  "b.txt",
  "real",
  "link",
  "out",
  "out-rel",
  "dangling",
  "harness-link",
  "loop",
  ".harness",
  ".HARNESS",
  "CON",
  "nul.txt",
  "COM1.log",
  "x:y",
  "C:",
  "trail.",
  "trail ",
  "\0",
  "\\",
  "é",
  "日本",
  "😀",
  "\ud800",
  " ",
  "*",
];

/** Path strings built from hostile pieces and separators, plus fully random unicode strings. */
const hostilePath = fc.oneof(
  fc
    .array(fc.tuple(fc.constantFrom(...COMPONENTS), fc.constantFrom("/", "\\", "//", "")), { maxLength: 6 })
    .map((pieces) => pieces.map(([component, separator]) => component + separator).join("")),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.constantFrom("/", "\\", "C:\\", "..", "../..", "link/../../x", "out/secret.txt"),
);

function isInside(root: string, candidate: string): boolean {
  return candidate === root || candidate.startsWith(root + path.sep);
}

/** realpath of the deepest existing ancestor of `target`. */
async function realAncestor(target: string): Promise<string> {
  for (let current = target; ; current = path.dirname(current)) {
    try {
      return await realpath(current);
    } catch {
      if (path.dirname(current) === current) throw new Error("no existing ancestor");
    }
  }
}

describe("resolve never leaves the workspace (property)", () => {
  let disk: DiskFixture;

  beforeAll(async () => {
    disk = await createDiskFixture({ "real/a.txt": "a", ".harness/state": "s" });
    const { root, outside } = disk;
    await symlink(path.join(root, "real"), path.join(root, "link"), "dir");
    await symlink(outside, path.join(root, "out"), "dir");
    await symlink("../outside", path.join(root, "out-rel"), "dir");
    await symlink(path.join(outside, "ghost"), path.join(root, "dangling"));
    await symlink(".harness", path.join(root, "harness-link"), "dir");
    await symlink("loop", path.join(root, "loop"));
  });
  afterAll(async () => {
    await disk.dispose();
  });

  it("on disk: throws WorkspaceError or returns a path whose real location is inside the root", async () => {
    await fc.assert(
      fc.asyncProperty(hostilePath, async (input) => {
        let resolved: string;
        try {
          resolved = await disk.fs.resolve(input);
        } catch (error) {
          expect(error).toBeInstanceOf(WorkspaceError);
          return;
        }
        expect(resolved === "." || !resolved.startsWith("/")).toBe(true);
        const parts = resolved === "." ? [] : lexicalParts(resolved);
        expect(parts).not.toContain("..");
        expect(parts[0]?.toLowerCase()).not.toBe(".harness");
        const target = path.join(disk.root, ...parts);
        expect(isInside(disk.root, target)).toBe(true);
        expect(isInside(disk.root, await realAncestor(target))).toBe(true);
      }),
      { numRuns: 400 },
    );
  });

  it("in memory: throws WorkspaceError or returns a normalized path inside the root", async () => {
    const fs = new MemoryWorkspaceFs({ "real/a.txt": "a" });
    await fc.assert(
      fc.asyncProperty(hostilePath, async (input) => {
        let resolved: string;
        try {
          resolved = await fs.resolve(input);
        } catch (error) {
          expect(error).toBeInstanceOf(WorkspaceError);
          return;
        }
        const parts = resolved === "." ? [] : lexicalParts(resolved);
        expect(parts.join("/") || ".").toBe(resolved);
        expect(parts).not.toContain("..");
        expect(parts[0]?.toLowerCase()).not.toBe(".harness");
        expect(isInside("/ws", path.posix.join("/ws", resolved))).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});
