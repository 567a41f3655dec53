import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { currentEntry, putEntry, TreePathError } from "../../src/undo/disk.js";
import { KEEP_MAX_BYTES, TreeSnapshot } from "../../src/workspace/tree-snapshot.js";

/*
 * The workspace record hashes every file of a repository before the model does anything, and
 * copies each one into `.harness/objects` so a shell command's change can be undone. A hostile
 * repository ships sparse files of gigabytes: each was read whole into memory and written out,
 * dense, into the object store (twenty 2 GiB files: 40 GiB of the user's disk).
 */

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

describe("recording a repository's huge sparse files", () => {
  it("hashes a file over the keep limit in chunks and keeps no copy of it; small files are kept", async () => {
    const root = mkdtempSync(join(tmpdir(), "harness-record-attack-"));
    roots.push(root);
    const big = join(root, "big.bin");
    writeFileSync(big, "head");
    const size = KEEP_MAX_BYTES * 4 + 3;
    truncateSync(big, size);
    writeFileSync(join(root, "small.txt"), "small\n");

    const tree = new TreeSnapshot({ root, stateDir: join(root, ".harness"), watch: false });
    try {
      const manifest = await tree.snapshot({ full: true });
      const expected = createHash("sha256")
        .update("head")
        .update(Buffer.alloc(size - 4))
        .digest("hex");
      expect(manifest.get("big.bin")).toEqual({ hash: expected, size, exec: false });
      const objects = readdirSync(join(root, ".harness", "objects"));
      expect(objects).toEqual([sha256Hex("small\n")]);
    } finally {
      tree.close();
    }
  });
});

describe("undo reading a file the session left over 2 GiB", () => {
  it("sees it by its size, without reading it, and cannot put such an entry back", async () => {
    const root = mkdtempSync(join(tmpdir(), "harness-record-attack-"));
    roots.push(root);
    writeFileSync(join(root, "huge.bin"), "");
    truncateSync(join(root, "huge.bin"), 3 * 1024 ** 3);
    const now = await currentEntry(root, "huge.bin", { directories: true });
    expect(now).toEqual({ entry: { oversize: true, size: 3 * 1024 ** 3, exec: false } });
    const error = await putEntry(root, "copy.bin", now.entry, { directories: true }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(TreePathError);
    expect(existsSync(join(root, "copy.bin"))).toBe(false);
  });
});
