import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FileArtifactStore } from "../../../src/artifacts/file-store.js";
import { childChanges } from "../../../src/session/agents/child-changes.js";
import {
  COPY_CHANGED,
  LINKS_NOT_MERGED,
  type MergeOutcome,
  mergeChanges,
} from "../../../src/session/agents/merge.js";
import { copyWorkspace, type WorkspaceCopy } from "../../../src/session/agents/workspace-copy.js";
import { sha256Hex } from "../../../src/shared/hash.js";
import { DiskWorkspaceFs } from "../../../src/workspace/disk-fs.js";
import { applyChange, changeSetSchema, manifestJson } from "../../../src/workspace/manifest.js";
import { MemoryWorkspaceFs } from "../../../src/workspace/memory-fs.js";
import { TreeSnapshot } from "../../../src/workspace/tree-snapshot.js";

const temps: string[] = [];
afterEach(() => {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function temp(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "harness-agents-merge-"));
  temps.push(dir);
  return dir;
}

interface Parent {
  root: string;
  fs: DiskWorkspaceFs;
  artifacts: FileArtifactStore;
  at(p: string): string;
}

async function parent(): Promise<Parent> {
  const base = temp();
  const root = path.join(base, "ws");
  mkdirSync(path.join(root, "src"), { recursive: true });
  mkdirSync(path.join(root, "old"));
  writeFileSync(path.join(root, "src", "a.ts"), "export const a = 1;\n");
  writeFileSync(path.join(root, "src", "b.ts"), "export const b = 2;\n");
  writeFileSync(path.join(root, "old", "x.txt"), "old x\n");
  writeFileSync(path.join(root, "notes.md"), "notes\n");
  writeFileSync(path.join(root, "tool.sh"), "#!/bin/sh\necho tool\n");
  return {
    root,
    fs: await DiskWorkspaceFs.create(root),
    artifacts: new FileArtifactStore(path.join(base, "artifacts")),
    at: (p) => path.join(root, p),
  };
}

async function child(p: Parent): Promise<WorkspaceCopy & { at(rel: string): string }> {
  const copy = await copyWorkspace(p.root, path.join(temp(), "child"));
  return { ...copy, at: (rel: string) => path.join(copy.root, rel) };
}

async function merge(p: Parent, copy: WorkspaceCopy): Promise<MergeOutcome> {
  return mergeChanges({
    fs: p.fs,
    artifacts: p.artifacts,
    copyRoot: copy.root,
    changes: await childChanges(copy),
  });
}

describe("mergeChanges", () => {
  it("applies clean changes: bytes, modes and directories on disk, the change set, before-contents kept", async () => {
    const p = await parent();
    const c = await child(p);
    writeFileSync(c.at("src/a.ts"), "export const a = 10;\n");
    writeFileSync(c.at("src/new.ts"), "export const n = 3;\n");
    mkdirSync(c.at("gen/empty"), { recursive: true });
    writeFileSync(c.at("gen/run.sh"), "#!/bin/sh\necho gen\n");
    chmodSync(c.at("gen/run.sh"), 0o755);
    chmodSync(c.at("tool.sh"), 0o755);
    unlinkSync(c.at("notes.md"));
    rmSync(c.at("old"), { recursive: true });
    const tree = new TreeSnapshot({ root: p.root, stateDir: path.join(temp(), "state"), watch: false });
    const parentBefore = await tree.snapshot({ full: true });

    const outcome = await merge(p, c);

    // The change set is exactly what happened to the parent's tree, in the record's own schema.
    const parentAfter = await tree.snapshot({ full: true });
    expect(changeSetSchema.parse(outcome.change)).toEqual(outcome.change);
    expect(manifestJson(applyChange(parentBefore, outcome.change))).toBe(manifestJson(parentAfter));
    expect(outcome.conflicts).toEqual([]);
    expect(outcome.already).toEqual([]);
    expect(readFileSync(p.at("src/a.ts"), "utf8")).toBe("export const a = 10;\n");
    expect(readFileSync(p.at("src/new.ts"), "utf8")).toBe("export const n = 3;\n");
    expect(readFileSync(p.at("gen/run.sh"), "utf8")).toBe("#!/bin/sh\necho gen\n");
    expect(statSync(p.at("gen/run.sh")).mode & 0o100).toBe(0o100);
    expect(statSync(p.at("tool.sh")).mode & 0o100).toBe(0o100);
    expect(readFileSync(p.at("tool.sh"), "utf8")).toBe("#!/bin/sh\necho tool\n");
    expect(statSync(p.at("gen/empty")).isDirectory()).toBe(true);
    expect(existsSync(p.at("notes.md"))).toBe(false);
    expect(existsSync(p.at("old"))).toBe(false);
    expect(readFileSync(p.at("src/b.ts"), "utf8")).toBe("export const b = 2;\n");
    expect(outcome.applied).toEqual([
      "gen",
      "gen/empty",
      "gen/run.sh",
      "notes.md",
      "old",
      "old/x.txt",
      "src/a.ts",
      "src/new.ts",
      "tool.sh",
    ]);
    expect(outcome.change.created.map((c) => c.path)).toEqual([
      "gen",
      "gen/empty",
      "gen/run.sh",
      "src/new.ts",
    ]);
    expect(outcome.change.modified.map((c) => c.path)).toEqual(["src/a.ts", "tool.sh"]);
    expect(outcome.change.deleted.map((c) => c.path)).toEqual(["notes.md", "old", "old/x.txt"]);
    expect(outcome.change.created.find((c) => c.path === "gen/run.sh")?.after).toMatchObject({ exec: true });

    // Every replaced file's content is in the parent's artifacts, by the hash its `before` names.
    for (const { path: rel, before } of [...outcome.change.modified, ...outcome.change.deleted]) {
      if (!("hash" in before)) continue;
      const kept = await p.artifacts.read(before.hash);
      expect(kept, rel).toBeDefined();
      expect(sha256Hex(kept as Uint8Array)).toBe(before.hash);
    }
    const aBefore = sha256Hex("export const a = 1;\n");
    expect(outcome.change.modified.find((m) => m.path === "src/a.ts")?.before).toMatchObject({
      hash: aBefore,
    });
    expect(Buffer.from((await p.artifacts.read(aBefore)) ?? []).toString("utf8")).toBe(
      "export const a = 1;\n",
    );
    const notesBefore = sha256Hex("notes\n");
    expect(outcome.change.deleted.find((d) => d.path === "notes.md")?.before).toMatchObject({
      hash: notesBefore,
    });
    expect(Buffer.from((await p.artifacts.read(notesBefore)) ?? []).toString("utf8")).toBe("notes\n");
  });

  it("leaves a file the parent changed since alone, as a conflict, and merges the rest", async () => {
    const p = await parent();
    const c = await child(p);
    writeFileSync(c.at("src/a.ts"), "child's a\n");
    writeFileSync(c.at("src/b.ts"), "child's b\n");
    unlinkSync(c.at("notes.md"));
    writeFileSync(p.at("src/a.ts"), "parent's a\n");
    writeFileSync(p.at("notes.md"), "parent's notes\n");
    writeFileSync(c.at("fresh.txt"), "child's fresh\n");
    writeFileSync(p.at("fresh.txt"), "parent's fresh\n");

    const outcome = await merge(p, c);

    expect(readFileSync(p.at("src/a.ts"), "utf8")).toBe("parent's a\n");
    expect(readFileSync(p.at("notes.md"), "utf8")).toBe("parent's notes\n");
    expect(readFileSync(p.at("fresh.txt"), "utf8")).toBe("parent's fresh\n");
    expect(readFileSync(p.at("src/b.ts"), "utf8")).toBe("child's b\n");
    expect(outcome.conflicts.map((c) => c.path)).toEqual(["fresh.txt", "notes.md", "src/a.ts"]);
    expect(outcome.conflicts.find((c) => c.path === "src/a.ts")?.reason).toMatch(/changed in the parent/);
    expect(outcome.conflicts.find((c) => c.path === "fresh.txt")?.reason).toMatch(/created in the parent/);
    expect(outcome.applied).toEqual(["src/b.ts"]);
    expect(outcome.change).toEqual({
      created: [],
      modified: [
        {
          path: "src/b.ts",
          before: { hash: sha256Hex("export const b = 2;\n"), size: 20, exec: false },
          after: { hash: sha256Hex("child's b\n"), size: 10, exec: false },
        },
      ],
      deleted: [],
    });
  });

  it("two children edit one file: the first merges, the second conflicts", async () => {
    const p = await parent();
    const first = await child(p);
    const second = await child(p);
    writeFileSync(first.at("src/a.ts"), "first\n");
    writeFileSync(second.at("src/a.ts"), "second\n");

    const one = await merge(p, first);
    const two = await merge(p, second);

    expect(one.applied).toEqual(["src/a.ts"]);
    expect(two.applied).toEqual([]);
    expect(two.change).toEqual({ created: [], modified: [], deleted: [] });
    expect(two.conflicts).toHaveLength(1);
    expect(two.conflicts[0]?.path).toBe("src/a.ts");
    expect(readFileSync(p.at("src/a.ts"), "utf8")).toBe("first\n");
  });

  it("merging twice writes nothing the second time and reports no conflict", async () => {
    const p = await parent();
    const c = await child(p);
    writeFileSync(c.at("src/a.ts"), "merged once\n");
    writeFileSync(c.at("added.txt"), "added\n");
    unlinkSync(c.at("notes.md"));
    mkdirSync(c.at("made"));
    const changes = await childChanges(c);
    const input = { fs: p.fs, artifacts: p.artifacts, copyRoot: c.root, changes };

    const once = await mergeChanges(input);
    const inodes = ["src/a.ts", "added.txt", "made"].map((rel) => statSync(p.at(rel)));
    const again = await mergeChanges(input);

    expect(once.applied).toEqual(["added.txt", "made", "notes.md", "src/a.ts"]);
    expect(again.applied).toEqual([]);
    expect(again.conflicts).toEqual([]);
    expect(again.change).toEqual({ created: [], modified: [], deleted: [] });
    expect(again.already).toEqual(["added.txt", "made", "notes.md", "src/a.ts"]);
    // What the first run changed, for a caller whose journal lost its record.
    expect(again.alreadyChange).toEqual(once.change);
    // Not written again: a write renames a new file into place, which would change the inode.
    ["src/a.ts", "added.txt", "made"].forEach((rel, i) => {
      const now = statSync(p.at(rel));
      expect(now.ino).toBe(inodes[i]?.ino);
      expect(now.mtimeMs).toBe(inodes[i]?.mtimeMs);
    });
  });

  it("checks again when it commits: a change made after the comparison is never overwritten or deleted", async () => {
    const p = await parent();
    const c = await child(p);
    writeFileSync(c.at("src/a.ts"), "child's a\n");
    unlinkSync(c.at("notes.md"));
    // The parent's file changes right after merge has read and compared it.
    const read = p.fs.readFile.bind(p.fs);
    p.fs.readFile = async (rel: string) => {
      const bytes = await read(rel);
      writeFileSync(p.at(rel), `raced ${rel}\n`);
      return bytes;
    };

    const outcome = await merge(p, c);

    expect(readFileSync(p.at("src/a.ts"), "utf8")).toBe("raced src/a.ts\n");
    expect(readFileSync(p.at("notes.md"), "utf8")).toBe("raced notes.md\n");
    expect(outcome.applied).toEqual([]);
    expect(outcome.change).toEqual({ created: [], modified: [], deleted: [] });
    expect(outcome.conflicts.map((x) => x.path)).toEqual(["notes.md", "src/a.ts"]);
    for (const conflict of outcome.conflicts) expect(conflict.reason).toMatch(/while it was being merged/);
    // The file moved aside to be compared was put back, nothing left beside it.
    expect(readdirSync(p.root).filter((name) => name.includes("merge-delete"))).toEqual([]);
  });

  it("a protected path is a conflict, never written", async () => {
    const p = await parent();
    mkdirSync(p.at("vendor/lib/.git"), { recursive: true });
    writeFileSync(p.at("vendor/lib/.git/config"), "[core]\n");
    const c = await child(p);
    writeFileSync(c.at("harness.config.json"), '{"rules":[]}\n');
    writeFileSync(c.at("vendor/lib/.git/config"), "[core]\n\tfsmonitor = evil\n");
    writeFileSync(c.at("src/a.ts"), "fine\n");

    const outcome = await merge(p, c);

    expect(existsSync(p.at("harness.config.json"))).toBe(false);
    expect(readFileSync(p.at("vendor/lib/.git/config"), "utf8")).toBe("[core]\n");
    expect(outcome.conflicts.map((c) => c.path)).toEqual(["harness.config.json", "vendor/lib/.git/config"]);
    for (const conflict of outcome.conflicts) expect(conflict.reason).toMatch(/protected/);
    expect(outcome.applied).toEqual(["src/a.ts"]);
  });

  it("symbolic links are not merged, and nothing is written through a link in the parent", async () => {
    const p = await parent();
    const outside = temp();
    const c = await child(p);
    symlinkSync("src/a.ts", c.at("alias"));
    writeFileSync(c.at("src/deeper.ts"), "deeper\n");
    // The parent's `src` becomes a link leading outside after the copy was made.
    rmSync(p.at("src"), { recursive: true });
    symlinkSync(outside, p.at("src"));

    const outcome = await merge(p, c);

    expect(outcome.conflicts.find((x) => x.path === "alias")?.reason).toBe(LINKS_NOT_MERGED);
    expect(existsSync(p.at("alias"))).toBe(false);
    expect(outcome.conflicts.map((x) => x.path)).toContain("src/deeper.ts");
    expect(existsSync(path.join(outside, "deeper.ts"))).toBe(false);
    expect(lstatSync(p.at("src")).isSymbolicLink()).toBe(true);
    expect(outcome.applied).toEqual([]);
  });

  it("a copy changed after its changes were taken is a conflict", async () => {
    const p = await parent();
    const c = await child(p);
    writeFileSync(c.at("src/a.ts"), "what the child reported\n");
    const changes = await childChanges(c);
    writeFileSync(c.at("src/a.ts"), "changed afterwards\n");

    const outcome = await mergeChanges({ fs: p.fs, artifacts: p.artifacts, copyRoot: c.root, changes });

    expect(outcome.conflicts).toEqual([{ path: "src/a.ts", reason: COPY_CHANGED }]);
    expect(readFileSync(p.at("src/a.ts"), "utf8")).toBe("export const a = 1;\n");
  });

  it("a directory the parent put something in is not removed; the child's deletes inside it are", async () => {
    const p = await parent();
    const c = await child(p);
    rmSync(c.at("old"), { recursive: true });
    writeFileSync(p.at("old/parent-new.txt"), "kept\n");

    const outcome = await merge(p, c);

    expect(existsSync(p.at("old/x.txt"))).toBe(false);
    expect(readFileSync(p.at("old/parent-new.txt"), "utf8")).toBe("kept\n");
    expect(outcome.applied).toEqual(["old/x.txt"]);
    expect(outcome.conflicts).toEqual([{ path: "old", reason: expect.stringMatching(/entries/) }]);
  });

  it("into a workspace without a disk root, files merge and deletes are conflicts", async () => {
    const p = await parent();
    const c = await child(p);
    writeFileSync(c.at("src/a.ts"), "in memory\n");
    unlinkSync(c.at("notes.md"));
    const memory = new MemoryWorkspaceFs({
      "src/a.ts": "export const a = 1;\n",
      "notes.md": "notes\n",
    });

    const outcome = await mergeChanges({
      fs: memory,
      artifacts: p.artifacts,
      copyRoot: c.root,
      changes: await childChanges(c),
    });

    expect(new TextDecoder().decode(await memory.readFile("src/a.ts"))).toBe("in memory\n");
    expect(outcome.applied).toEqual(["src/a.ts"]);
    expect(outcome.conflicts.map((x) => x.path)).toEqual(["notes.md"]);
    expect(new TextDecoder().decode(await memory.readFile("notes.md"))).toBe("notes\n");
  });
});
