import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { folderDigest } from "../../src/session/extensions/folder-digest.js";
import { sha256Hex } from "../../src/shared/hash.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "harness-digest-"));
  dirs.push(dir);
  return dir;
}

describe("folderDigest keeps the bytes it hashed", () => {
  it("hands back the named file's very bytes, covered by the digest", () => {
    const dir = folder();
    writeFileSync(join(dir, "SKILL.md"), "---\nname: x\n---\nbody\n");
    mkdirSync(join(dir, "scripts"));
    writeFileSync(join(dir, "scripts", "run.sh"), "echo hi\n");
    const first = folderDigest(dir, "SKILL.md");
    expect(first.kept?.toString("utf8")).toBe("---\nname: x\n---\nbody\n");
    expect(first.files).toEqual(["SKILL.md", "scripts/run.sh"]);
    // Another body is another digest: what is shown cannot differ from what was approved.
    writeFileSync(join(dir, "SKILL.md"), "---\nname: x\n---\nother\n");
    const second = folderDigest(dir, "SKILL.md");
    expect(second.digest).not.toBe(first.digest);
    expect(sha256Hex(second.kept ?? Buffer.alloc(0))).toBe(sha256Hex("---\nname: x\n---\nother\n"));
  });

  it("keeps nothing for a link in the file's place (links are recorded, never followed)", () => {
    const dir = folder();
    const outside = join(folder(), "secret.md");
    writeFileSync(outside, "outside bytes\n");
    symlinkSync(outside, join(dir, "SKILL.md"));
    const result = folderDigest(dir, "SKILL.md");
    expect(result.kept).toBeUndefined();
    expect(result.files).toEqual([]);
  });
});
