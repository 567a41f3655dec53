import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { childChanges } from "../../../src/session/agents/child-changes.js";
import { copyWorkspace } from "../../../src/session/agents/workspace-copy.js";
import { sha256Hex } from "../../../src/shared/hash.js";

const temps: string[] = [];
afterEach(() => {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function temp(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "harness-agents-changes-"));
  temps.push(dir);
  return dir;
}

describe("childChanges", () => {
  it("finds created, modified and deleted files, links and directories, with line counts, sorted", async () => {
    const source = path.join(temp(), "ws");
    mkdirSync(path.join(source, "src"), { recursive: true });
    mkdirSync(path.join(source, "old-dir"));
    writeFileSync(path.join(source, "src", "a.ts"), "one\ntwo\nthree\n");
    writeFileSync(path.join(source, "gone.txt"), "a\nb\n");
    writeFileSync(path.join(source, "image.bin"), Buffer.from([0, 1, 2]));
    writeFileSync(path.join(source, "same.txt"), "unchanged\n");
    writeFileSync(path.join(source, "tool.sh"), "#!/bin/sh\n");
    const copy = await copyWorkspace(source, path.join(temp(), "child"));
    const at = (p: string) => path.join(copy.root, p);

    writeFileSync(at("src/a.ts"), "one\n2\nthree\nfour\n");
    unlinkSync(at("gone.txt"));
    writeFileSync(at("image.bin"), Buffer.from([0, 9, 9, 9]));
    mkdirSync(at("new-dir/inner"), { recursive: true });
    writeFileSync(at("new-dir/inner/n.md"), "# new\n\nbody\n");
    rmSync(at("old-dir"), { recursive: true });
    symlinkSync("src/a.ts", at("link"));
    chmodSync(at("tool.sh"), 0o755);
    // The copy's own harness state is never a change.
    writeFileSync(at(".harness/extra"), "state\n");

    // The parent's kept contents (in a session: WorkspaceEffects.kept), for the base side.
    const kept = new Map(
      ["src/a.ts", "gone.txt", "image.bin", "same.txt", "tool.sh"].map((rel) => {
        const bytes = readFileSync(path.join(source, rel));
        return [sha256Hex(bytes), bytes] as const;
      }),
    );
    const changes = await childChanges(copy, { contents: (hash) => kept.get(hash) });
    expect(changes.map((c) => c.path)).toEqual([
      "gone.txt",
      "image.bin",
      "link",
      "new-dir",
      "new-dir/inner",
      "new-dir/inner/n.md",
      "old-dir",
      "src/a.ts",
      "tool.sh",
    ]);
    const byPath = new Map(changes.map((c) => [c.path, c]));
    expect(byPath.get("src/a.ts")).toMatchObject({
      before: { hash: sha256Hex("one\ntwo\nthree\n"), exec: false },
      after: { hash: sha256Hex("one\n2\nthree\nfour\n"), size: 17, exec: false },
      added: 2,
      removed: 1,
    });
    expect(byPath.get("gone.txt")).toMatchObject({ after: null, added: 0, removed: 2 });
    expect(byPath.get("new-dir/inner/n.md")).toMatchObject({ before: null, added: 3, removed: 0 });
    expect(byPath.get("new-dir")).toEqual({
      path: "new-dir",
      before: null,
      after: { dir: true },
      added: 0,
      removed: 0,
    });
    expect(byPath.get("old-dir")).toMatchObject({ before: { dir: true }, after: null });
    expect(byPath.get("image.bin")).toMatchObject({ added: 0, removed: 0 });
    expect(byPath.get("link")).toMatchObject({ before: null, after: { link: "src/a.ts" } });
    expect(byPath.get("tool.sh")).toMatchObject({
      before: { exec: false },
      after: { exec: true },
      added: 0,
      removed: 0,
    });
  });

  it("without the base contents, counts only what it can: a new file's lines", async () => {
    const source = path.join(temp(), "ws");
    mkdirSync(source);
    writeFileSync(path.join(source, "f.txt"), "x\n");
    const copy = await copyWorkspace(source, path.join(temp(), "child"));
    writeFileSync(path.join(copy.root, "f.txt"), "y\nz\n");
    writeFileSync(path.join(copy.root, "g.txt"), "1\n2\n3\n");
    const changes = await childChanges(copy);
    expect(changes.map(({ path, added, removed }) => ({ path, added, removed }))).toEqual([
      { path: "f.txt", added: 0, removed: 0 },
      { path: "g.txt", added: 3, removed: 0 },
    ]);
    // Asked again, the modified file's old side is still unknown; the new sides are kept.
    writeFileSync(path.join(copy.root, "g.txt"), "1\n");
    expect((await childChanges(copy)).find((c) => c.path === "g.txt")).toMatchObject({ added: 1 });
  });

  it("finds nothing in an untouched copy", async () => {
    const source = path.join(temp(), "ws");
    mkdirSync(source);
    writeFileSync(path.join(source, "f.txt"), "x\n");
    const copy = await copyWorkspace(source, path.join(temp(), "child"));
    expect(await childChanges(copy)).toEqual([]);
  });
});
