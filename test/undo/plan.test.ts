import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyRecord, EventData } from "../../src/journal/vocabulary.js";
import { sha256Hex } from "../../src/shared/hash.js";
import { checkedParts, currentEntry, putEntry, TreePathError } from "../../src/undo/disk.js";
import { planUndo, resolveTarget, UndoTargetError, unfinishedUndo } from "../../src/undo/plan.js";

/** A session recorded before directories were; `WITH_DIRS`, one that records them. */
const OLD = { directories: false };
const WITH_DIRS = { directories: true };
const DIR = { dir: true as const };

const file = (text: string) => ({ hash: sha256Hex(text), size: Buffer.byteLength(text), exec: false });

let seq = 0;
function rec<T extends AnyRecord["type"]>(type: T, data: EventData<T>): AnyRecord {
  return { seq: seq++, type, data, time: "", prev: "", hash: "" } as AnyRecord;
}
function changed(
  call_id: string,
  change: Partial<Omit<EventData<"workspace.changed">, "call_id">>,
): AnyRecord {
  return rec("workspace.changed", {
    call_id,
    source: "shell",
    created: [],
    modified: [],
    deleted: [],
    ...change,
  });
}

describe("planning an undo", () => {
  it("folds every change after the point per path: what the file must be now, what it gets back", () => {
    seq = 0;
    const records = [
      rec("user.input", { text: "one", turn: 1 }),
      changed("c1", {
        created: [{ path: "a", after: file("a1") }],
        modified: [{ path: "m", before: file("m0"), after: file("m1") }],
      }),
      changed("c2", {
        modified: [
          { path: "a", before: file("a1"), after: file("a2") },
          { path: "m", before: file("m1"), after: file("m0") },
        ],
      }),
      changed("c3", { created: [{ path: "tmp", after: file("t") }] }),
      changed("c4", {
        deleted: [
          { path: "tmp", before: file("t") },
          { path: "z", before: { link: "a" } },
        ],
      }),
    ];
    // m changed and changed back, tmp created then deleted: nothing to do for either.
    expect(planUndo(records, 0)).toEqual([
      { path: "a", expect: file("a2"), restore: null },
      { path: "z", expect: null, restore: { link: "a" } },
    ]);
    expect(planUndo(records, 2)).toEqual([{ path: "z", expect: null, restore: { link: "a" } }]);
    expect(planUndo(records, 1)).toEqual([
      { path: "a", expect: file("a2"), restore: file("a1") },
      { path: "m", expect: file("m0"), restore: file("m1") },
      { path: "z", expect: null, restore: { link: "a" } },
    ]);
    expect(planUndo(records, 4)).toEqual([]);
  });

  it("removes directories deepest first after their entries, and makes them before anything below them", () => {
    seq = 0;
    const records = [
      rec("user.input", { text: "one", turn: 1 }),
      changed("c1", {
        created: [
          { path: "a", after: DIR },
          { path: "a/b", after: DIR },
          { path: "a/b/c", after: DIR },
          { path: "a/b/f", after: file("f") },
          { path: "a-z", after: DIR },
        ],
      }),
      changed("c2", {
        deleted: [
          { path: "a/b/c", before: DIR },
          { path: "a/b/f", before: file("f") },
          { path: "a/b", before: DIR },
          { path: "a", before: DIR },
        ],
      }),
    ];
    // Created and deleted after the point: nothing to do but remove what is left.
    expect(planUndo(records, 0)).toEqual([{ path: "a-z", expect: DIR, restore: null }]);
    expect(planUndo(records, 1)).toEqual([
      { path: "a", expect: null, restore: DIR },
      { path: "a/b", expect: null, restore: DIR },
      { path: "a/b/c", expect: null, restore: DIR },
      { path: "a/b/f", expect: null, restore: file("f") },
    ]);
    seq = 0;
    const made = [
      rec("user.input", { text: "one", turn: 1 }),
      changed("c1", {
        created: [
          { path: "p", after: DIR },
          { path: "p/q", after: DIR },
          { path: "p/q/r", after: DIR },
          { path: "p/q/f", after: file("f") },
          { path: "p-z", after: DIR },
        ],
      }),
    ];
    expect(planUndo(made, 0).map((s) => s.path)).toEqual(["p/q/r", "p/q/f", "p/q", "p-z", "p"]);
  });

  it("resolves turns, calls, earlier undos and records, and names a point that does not exist", () => {
    seq = 0;
    const records = [
      rec("user.input", { text: "one", turn: 1 }),
      changed("c1", {}),
      rec("user.input", { text: "two", turn: 2 }),
      changed("c2", {}),
      rec("undo.started", { undo_id: "u1", target: { seq: 0 }, plan: [] }),
      rec("undo.finished", { undo_id: "u1", restored: 0, conflicts: [] }),
    ];
    expect(resolveTarget(records, { kind: "last-turn" })).toBe(1);
    expect(resolveTarget(records, { kind: "turn", turn: 1 })).toBe(-1);
    expect(resolveTarget(records, { kind: "call", callId: "c2" })).toBe(2);
    expect(resolveTarget(records, { kind: "call", callId: "undo:u1" })).toBe(3);
    expect(resolveTarget(records, { kind: "seq", seq: 5 })).toBe(5);
    expect(() => resolveTarget(records, { kind: "turn", turn: 3 })).toThrow(UndoTargetError);
    expect(() => resolveTarget(records, { kind: "call", callId: "c9" })).toThrow(/no call "c9"/);
    expect(() => resolveTarget(records, { kind: "seq", seq: 6 })).toThrow(/from 0 to 5/);
    expect(unfinishedUndo(records)).toBeUndefined();
    expect(unfinishedUndo(records.slice(0, 5))?.undo_id).toBe("u1");
  });
});

describe("the undo's file operations", () => {
  let root: string;
  let outside: string;
  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  it("never reach through a symlinked parent, nor into .harness or .git", async () => {
    root = mkdtempSync(join(tmpdir(), "harness-undo-disk-"));
    outside = mkdtempSync(join(tmpdir(), "harness-undo-outside-"));
    writeFileSync(join(outside, "f"), "outside\n");
    symlinkSync(outside, join(root, "sub"));
    // Through the link nothing is at sub/f as far as the tree goes; deleting it touches nothing outside.
    expect((await currentEntry(root, "sub/f", OLD)).entry).toBeNull();
    await putEntry(root, "sub/f", null, OLD);
    expect(readFileSync(join(outside, "f"), "utf8")).toBe("outside\n");
    await expect(putEntry(root, "sub/f", file("x"), OLD, Buffer.from("x"))).rejects.toThrow(TreePathError);
    expect(readFileSync(join(outside, "f"), "utf8")).toBe("outside\n");
    for (const bad of [".harness/keys", "a/.git/config", "../x", "/etc/passwd", "a//b", "a/./b"])
      expect(() => checkedParts(bad), bad).toThrow(TreePathError);
    expect(checkedParts("odd\nname/-rf")).toEqual(["odd\nname", "-rf"]);
  });

  it("restores a file with its exec bit and a symlink, and a delete removes the directories it emptied", async () => {
    root = mkdtempSync(join(tmpdir(), "harness-undo-disk-"));
    outside = mkdtempSync(join(tmpdir(), "harness-undo-outside-"));
    await putEntry(
      root,
      "deep/er/run.sh",
      { ...file("#!/bin/sh\n"), exec: true },
      OLD,
      Buffer.from("#!/bin/sh\n"),
    );
    expect((await currentEntry(root, "deep/er/run.sh", OLD)).entry).toEqual({
      ...file("#!/bin/sh\n"),
      exec: true,
    });
    await putEntry(root, "deep/er/run.sh", file("#!/bin/sh\n"), OLD, Buffer.from("#!/bin/sh\n"));
    expect((await currentEntry(root, "deep/er/run.sh", OLD)).entry).toEqual(file("#!/bin/sh\n"));
    await putEntry(root, "link", { link: "deep/er/run.sh" }, OLD);
    expect((await currentEntry(root, "link", OLD)).entry).toEqual({ link: "deep/er/run.sh" });
    mkdirSync(join(root, "keep"));
    writeFileSync(join(root, "keep/other"), "o");
    await putEntry(root, "keep/x", file("x"), OLD, Buffer.from("x"));
    await putEntry(root, "keep/x", null, OLD);
    await putEntry(root, "deep/er/run.sh", null, OLD);
    expect((await currentEntry(root, "deep/er/run.sh", OLD)).entry).toBeNull();
    expect(() => readFileSync(join(root, "deep"))).toThrow(/ENOENT/);
    expect(readFileSync(join(root, "keep/other"), "utf8")).toBe("o");
  });

  it("in a session that records directories: a directory is an entry, removed only when empty, never pruned", async () => {
    root = mkdtempSync(join(tmpdir(), "harness-undo-disk-"));
    outside = mkdtempSync(join(tmpdir(), "harness-undo-outside-"));
    await putEntry(root, "e/m/p/t/y", DIR, WITH_DIRS);
    expect((await currentEntry(root, "e/m/p/t/y", WITH_DIRS)).entry).toEqual(DIR);
    await expect(currentEntry(root, "e/m", OLD)).rejects.toThrow(/is a directory now/);
    await putEntry(root, "e/m/p/t/y/f", file("f"), WITH_DIRS, Buffer.from("f"));
    // The file's delete leaves its directory: the record has a step of its own for that.
    await putEntry(root, "e/m/p/t/y/f", null, WITH_DIRS);
    expect((await currentEntry(root, "e/m/p/t/y", WITH_DIRS)).entry).toEqual(DIR);
    // A directory that still holds something is not removed.
    await expect(putEntry(root, "e/m/p", null, WITH_DIRS)).rejects.toMatchObject({ code: "ENOTEMPTY" });
    await putEntry(root, "e/m/p/t/y", null, WITH_DIRS);
    expect((await currentEntry(root, "e/m/p/t/y", WITH_DIRS)).entry).toBeNull();
    expect((await currentEntry(root, "e/m/p/t", WITH_DIRS)).entry).toEqual(DIR);
    // An empty directory where a file goes back is replaced by it, and the other way round.
    await putEntry(root, "e/m/p/t", file("t"), WITH_DIRS, Buffer.from("t"));
    expect((await currentEntry(root, "e/m/p/t", WITH_DIRS)).entry).toEqual(file("t"));
    await putEntry(root, "e/m/p/t", DIR, WITH_DIRS);
    expect((await currentEntry(root, "e/m/p/t", WITH_DIRS)).entry).toEqual(DIR);
  });
});
