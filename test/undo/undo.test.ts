import { chmodSync, mkdirSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ArtifactStore } from "../../src/artifacts/store.js";
import { runUndo, type UndoReport } from "../../src/undo/apply.js";
import type { UndoTarget } from "../../src/undo/plan.js";
import { Recording, treeBytes } from "./recording.js";

const binary = (seed: number, size: number) =>
  Buffer.from(Array.from({ length: size }, (_, i) => (i * 31 + seed * 7) % 256));

/**
 * A session mixing file writes and edits with shell commands that install, generate, rename and
 * delete files (binary ones, odd names, an exec bit, a symlink, a directory turned into a file),
 * with the tree's exact bytes taken after every call.
 */
async function mixedSession(): Promise<{
  rec: Recording;
  points: { seq: number; tree: Record<string, string> }[];
}> {
  const rec = new Recording();
  const at = (path: string) => join(rec.root, path);
  mkdirSync(at("src"));
  mkdirSync(at("bin"));
  writeFileSync(at("README.md"), "hello\n");
  writeFileSync(at("src/app.ts"), "export const a = 1;\n");
  writeFileSync(at("bin/run.sh"), "#!/bin/sh\necho hi\n", { mode: 0o755 });
  writeFileSync(at("data.bin"), binary(1, 4096));
  writeFileSync(at("old name.txt"), "old\n");
  symlinkSync("README.md", at("link"));
  const points: { seq: number; tree: Record<string, string> }[] = [];
  const mark = async () => {
    const writer = await rec.writer();
    points.push({ seq: writer.records.length - 1, tree: treeBytes(rec.root) });
  };
  await rec.base();
  await mark();
  await rec.turn(1);
  await rec.call(
    "c1",
    () => {
      writeFileSync(at("src/app.ts"), "export const a = 2;\n");
      mkdirSync(at("notes"));
      writeFileSync(at("notes/ü ñ.txt"), "unicode name\n");
    },
    "tool",
  );
  await mark();
  await rec.call("c2", () => writeFileSync(at("README.md"), "hello, edited\n"), "tool");
  await mark();
  await rec.turn(2);
  await rec.call("c3", () => {
    mkdirSync(at("node_modules/pkg"), { recursive: true });
    writeFileSync(at("node_modules/pkg/index.js"), "module.exports = 1;\n");
    writeFileSync(at("node_modules/pkg/cli"), binary(2, 1000), { mode: 0o755 });
    unlinkSync(at("data.bin"));
    chmodSync(at("bin/run.sh"), 0o644);
  });
  await mark();
  await rec.call("c4", () => {
    renameSync(at("old name.txt"), at("new name.txt"));
    mkdirSync(at("gen"));
    writeFileSync(at("gen/out.bin"), binary(3, 2048));
    unlinkSync(at("link"));
    symlinkSync("src/app.ts", at("link"));
  });
  await mark();
  await rec.turn(3);
  await rec.call("c5", () => {
    unlinkSync(at("src/app.ts"));
    writeFileSync(at("-dash file"), "dash\n");
    writeFileSync(at("odd\nname"), binary(4, 10));
  });
  await mark();
  await rec.call("c6", () => {
    rmSync(at("notes"), { recursive: true });
    rmSync(at("gen"), { recursive: true });
    writeFileSync(at("gen"), "gen is a file now\n");
  });
  await mark();
  return { rec, points };
}

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
  it("undo to each point restores the tree byte for byte, and undoing that undo brings the end back", async () => {
    const { rec, points } = await mixedSession();
    current = rec;
    const end = points.at(-1)!.tree;
    expect(Object.keys(end)).toContain("odd\nname");
    for (const point of points.slice(0, -1)) {
      const report = await undo(rec, { kind: "seq", seq: point.seq });
      expect(conflicts(report)).toEqual([]);
      expect(treeBytes(rec.root)).toEqual(point.tree);
      const back = await undo(rec, { kind: "call", callId: `undo:${report.undo_id}` });
      expect(conflicts(back)).toEqual([]);
      expect(treeBytes(rec.root)).toEqual(end);
    }
    const records = (await rec.writer()).records;
    const finished = records.filter((r) => r.type === "undo.finished");
    expect(finished).toHaveLength(2 * (points.length - 1));
    // Each undo's changes are journaled as its own call, source "undo".
    const undoChanges = records.filter((r) => r.type === "workspace.changed" && r.data.source === "undo");
    expect(undoChanges).toHaveLength(finished.length);
  });

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
    const before = (await rec.writer()).records.length;
    const report = await undo(rec, { kind: "seq", seq: points[0]!.seq }, { dryRun: true });
    expect(report.undo_id).toBeNull();
    expect(report.outcomes.length).toBeGreaterThan(5);
    expect(report.outcomes.every((o) => o.outcome === "restored")).toBe(true);
    expect(treeBytes(rec.root)).toEqual(points.at(-1)!.tree);
    expect((await rec.writer()).records.length).toBe(before);
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
    const finished = (await rec.writer()).records.filter((r) => r.type === "undo.finished");
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
    const records = (await rec.writer()).records;
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
