import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ArtifactStore } from "../../src/artifacts/store.js";
import { runUndo, type UndoReport } from "../../src/undo/apply.js";
import type { UndoTarget } from "../../src/undo/plan.js";
import { withFileLock } from "../../src/workspace/file-lock.js";
import { mixedSession, type Recording, treeBytes } from "./recording.js";

let current: Recording | undefined;
afterEach(async () => {
  await current?.close();
  if (current) rmSync(current.root, { recursive: true, force: true });
  current = undefined;
});

async function undo(
  rec: Recording,
  target: UndoTarget,
  options: { dryRun?: boolean; artifacts?: ArtifactStore } = {},
): Promise<UndoReport> {
  return runUndo({
    root: rec.root,
    writer: await rec.writer(),
    artifacts: options.artifacts ?? rec.artifacts,
    target,
    dryRun: options.dryRun ?? false,
  });
}

const conflicts = (report: UndoReport) => report.outcomes.filter((o) => o.outcome === "conflict");

describe("harness undo on a recorded session", () => {
  it.each([
    ["a session recorded before directories were", false],
    ["a session that records directories, empty ones included", true],
  ])(
    "undo to each point restores the tree byte for byte, and undoing that undo brings the end back: %s",
    async (_, directories) => {
      const { rec, points } = await mixedSession(directories);
      current = rec;
      const end = points.at(-1)!.tree;
      expect(Object.keys(end)).toContain("odd\nname");
      // After c5 deleted its only file, src is an empty directory: in the tree only when recorded.
      expect(points[5]!.tree.src).toBe(directories ? "dir" : undefined);
      for (const point of points.slice(0, -1)) {
        const report = await undo(rec, { kind: "seq", seq: point.seq });
        expect(conflicts(report)).toEqual([]);
        expect(treeBytes(rec.root, { directories })).toEqual(point.tree);
        const back = await undo(rec, { kind: "call", callId: `undo:${report.undo_id}` });
        expect(conflicts(back)).toEqual([]);
        expect(treeBytes(rec.root, { directories })).toEqual(end);
      }
      const records = await (await rec.writer()).readAll();
      const finished = records.filter((r) => r.type === "undo.finished");
      expect(finished).toHaveLength(2 * (points.length - 1));
      // Each undo's changes are journaled as its own call, source "undo".
      const undoChanges = records.filter((r) => r.type === "workspace.changed" && r.data.source === "undo");
      expect(undoChanges).toHaveLength(finished.length);
    },
  );

  it("undoes the last turn by default, a named turn, and a call with everything after it", async () => {
    const { rec, points } = await mixedSession();
    current = rec;
    // points: base, c1, c2, c3, c4, c5, c6; turn 3 began after c4, turn 2 after c2.
    await undo(rec, { kind: "last-turn" });
    expect(treeBytes(rec.root)).toEqual(points[4]!.tree);
    await undo(rec, { kind: "turn", turn: 2 });
    expect(treeBytes(rec.root)).toEqual(points[2]!.tree);
    await undo(rec, { kind: "call", callId: "c2" });
    expect(treeBytes(rec.root)).toEqual(points[1]!.tree);
  });

  it("a dry run changes nothing and journals nothing", async () => {
    const { rec, points } = await mixedSession();
    current = rec;
    const before = (await rec.writer()).length;
    const report = await undo(rec, { kind: "seq", seq: points[0]!.seq }, { dryRun: true });
    expect(report.undo_id).toBeNull();
    expect(report.outcomes.length).toBeGreaterThan(5);
    expect(report.outcomes.every((o) => o.outcome === "restored")).toBe(true);
    expect(treeBytes(rec.root)).toEqual(points.at(-1)!.tree);
    expect((await rec.writer()).length).toBe(before);
  });

  it("waits for another harness writer's lock on a file, then compares: a write that landed under the lock is a conflict", async () => {
    const { rec, points } = await mixedSession();
    current = rec;
    let undoing: Promise<UndoReport> | undefined;
    await withFileLock(join(rec.root, ".harness", "locks"), "README.md", async () => {
      undoing = undo(rec, { kind: "seq", seq: points[0]!.seq });
      // The undo is under way and has reached README.md's lock; the other writer's write lands now.
      await new Promise((resolve) => setTimeout(resolve, 300));
      writeFileSync(join(rec.root, "README.md"), "written by another harness process\n");
    });
    const report = await undoing!;
    expect(conflicts(report).map((c) => c.path)).toEqual(["README.md"]);
    expect(treeBytes(rec.root)["README.md"]).toBe(
      `-:${Buffer.from("written by another harness process\n").toString("hex")}`,
    );
  });

  it("a file a person changed after the run is a conflict: reported, left alone with the person's bytes, the rest restored", async () => {
    const { rec, points } = await mixedSession();
    current = rec;
    writeFileSync(join(rec.root, "README.md"), "a person's edit\n");
    writeFileSync(join(rec.root, "gen"), "a person rewrote the generated file\n");
    const report = await undo(rec, { kind: "seq", seq: points[0]!.seq });
    expect(
      conflicts(report)
        .map((c) => c.path)
        .sort(),
    ).toEqual(["README.md", "gen"]);
    const tree = treeBytes(rec.root);
    expect(tree["README.md"]).toBe(`-:${Buffer.from("a person's edit\n").toString("hex")}`);
    expect(tree.gen).toBe(`-:${Buffer.from("a person rewrote the generated file\n").toString("hex")}`);
    const { "README.md": _a, gen: _g, ...rest } = tree;
    const { "README.md": _b, gen: _h, ...expected } = points[0]!.tree;
    // gen/out.bin never existed at the base; every other file is back.
    expect(rest).toEqual(expected);
    const finished = (await (await rec.writer()).readAll()).filter((r) => r.type === "undo.finished");
    expect(finished.map((r) => r.data)).toEqual([
      {
        undo_id: report.undo_id,
        restored: report.outcomes.length - 2,
        conflicts: conflicts(report).map(({ path, reason }) => ({ path, reason })),
      },
    ]);
  });

  it("an undo cut short after undo.started and some files is finished by the next undo, exactly once", async () => {
    const { rec, points } = await mixedSession();
    current = rec;
    let reads = 0;
    const crashing: ArtifactStore = {
      read: async (id) => {
        if (++reads > 2) throw new Error("killed");
        return rec.artifacts.read(id);
      },
      put: (bytes) => rec.artifacts.put(bytes),
      open: () => rec.artifacts.open(),
    };
    await expect(undo(rec, { kind: "seq", seq: points[0]!.seq }, { artifacts: crashing })).rejects.toThrow(
      "killed",
    );
    const partial = treeBytes(rec.root);
    expect(partial).not.toEqual(points[0]!.tree);
    expect(partial).not.toEqual(points.at(-1)!.tree);
    await rec.close();
    // A new harness process: the journal on disk is all it has.
    const report = await undo(rec, { kind: "last-turn" });
    expect(report.resumed).toBe(true);
    expect(conflicts(report)).toEqual([]);
    expect(treeBytes(rec.root)).toEqual(points[0]!.tree);
    const again = await undo(rec, { kind: "seq", seq: points[0]!.seq });
    expect(again.plan).toEqual([]);
    const records = await (await rec.writer()).readAll();
    expect(records.filter((r) => r.type === "undo.started")).toHaveLength(1);
    expect(records.filter((r) => r.type === "undo.finished")).toHaveLength(1);
    const change = records.find((r) => r.type === "workspace.changed" && r.data.source === "undo");
    // The journaled change holds every file, those the cut-short run restored included.
    expect(
      change?.type === "workspace.changed" &&
        change.data.created.length + change.data.modified.length + change.data.deleted.length,
    ).toBe(report.plan.length);
  });
});
