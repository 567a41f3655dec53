import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { runUndo, type UndoReport } from "../../src/undo/apply.js";
import { Recording } from "../undo/recording.js";

/*
 * Undo writes and deletes files on the host from a session's record. Everything between the
 * recording and the undo is attacker-controlled in these tests: the model (or anyone) may turn a
 * directory into a symlink leading out of the workspace, a file into a symlink or a directory,
 * or change the kept bytes. Undo must never write or delete through a link, never restore bytes
 * that are not the recorded ones.
 */

const cleanups: string[] = [];
let current: Recording | undefined;
afterEach(async () => {
  await current?.close();
  for (const dir of [...cleanups, ...(current ? [current.root] : [])])
    rmSync(dir, { recursive: true, force: true });
  cleanups.length = 0;
  current = undefined;
});

function outsideDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "harness-undo-outside-"));
  cleanups.push(dir);
  return dir;
}

async function recorded(
  setup: (at: (p: string) => string) => void,
  change: (at: (p: string) => string) => void,
) {
  const rec = new Recording();
  current = rec;
  const at = (path: string) => join(rec.root, path);
  setup(at);
  await rec.base();
  await rec.turn(1);
  await rec.call("c1", () => change(at));
  return { rec, at };
}

async function undoLastTurn(rec: Recording): Promise<UndoReport> {
  return runUndo({
    root: rec.root,
    writer: await rec.writer(),
    artifacts: rec.artifacts,
    target: { kind: "last-turn" },
    dryRun: false,
  });
}

const conflictPaths = (report: UndoReport) =>
  report.outcomes.filter((o) => o.outcome === "conflict").map((o) => o.path);

describe("attack: undo through what changed after the session", () => {
  it("a directory swapped for a symlink out of the workspace (holding the very bytes undo expects): nothing is written there", async () => {
    const { rec, at } = await recorded(
      (at) => {
        mkdirSync(at("sub"));
        writeFileSync(at("sub/a.txt"), "one\n");
      },
      (at) => writeFileSync(at("sub/a.txt"), "two\n"),
    );
    const outside = outsideDir();
    writeFileSync(join(outside, "a.txt"), "two\n");
    rmSync(at("sub"), { recursive: true });
    symlinkSync(outside, at("sub"));

    const report = await undoLastTurn(rec);
    expect(conflictPaths(report)).toEqual(["sub/a.txt"]);
    expect(readFileSync(join(outside, "a.txt"), "utf8")).toBe("two\n");
    expect(lstatSync(at("sub")).isSymbolicLink()).toBe(true);
  });

  it("a created file whose directory became a symlink out: undo does not delete the file it leads to", async () => {
    const { rec, at } = await recorded(
      (at) => mkdirSync(at("gen")),
      (at) => writeFileSync(at("gen/new.txt"), "made\n"),
    );
    const outside = outsideDir();
    writeFileSync(join(outside, "new.txt"), "made\n");
    rmSync(at("gen"), { recursive: true });
    symlinkSync(outside, at("gen"));

    const report = await undoLastTurn(rec);
    // Through real directories there is no gen/new.txt any more: nothing to delete, nothing deleted.
    expect(report.outcomes).toEqual([{ path: "gen/new.txt", outcome: "already" }]);
    expect(readFileSync(join(outside, "new.txt"), "utf8")).toBe("made\n");
    expect(lstatSync(at("gen")).isSymbolicLink()).toBe(true);
  });

  it("a file swapped for a symlink to a file outside with the same bytes: the link is a conflict, the target untouched", async () => {
    const { rec, at } = await recorded(
      (at) => writeFileSync(at("a.txt"), "one\n"),
      (at) => writeFileSync(at("a.txt"), "two\n"),
    );
    const outside = outsideDir();
    writeFileSync(join(outside, "target.txt"), "two\n");
    rmSync(at("a.txt"));
    symlinkSync(join(outside, "target.txt"), at("a.txt"));

    const report = await undoLastTurn(rec);
    expect(conflictPaths(report)).toEqual(["a.txt"]);
    expect(readFileSync(join(outside, "target.txt"), "utf8")).toBe("two\n");
    expect(lstatSync(at("a.txt")).isSymbolicLink()).toBe(true);
  });

  it("a file replaced by a directory: a conflict, the directory and what it holds left alone", async () => {
    const { rec, at } = await recorded(
      (at) => writeFileSync(at("a.txt"), "one\n"),
      (at) => writeFileSync(at("a.txt"), "two\n"),
    );
    rmSync(at("a.txt"));
    mkdirSync(at("a.txt"));
    writeFileSync(at("a.txt/keep"), "keep\n");

    const report = await undoLastTurn(rec);
    expect(conflictPaths(report)).toEqual(["a.txt"]);
    expect(readFileSync(at("a.txt/keep"), "utf8")).toBe("keep\n");
  });

  it("a kept before-content tampered after recording: never restored; a conflict naming it, the other files restored", async () => {
    const { rec, at } = await recorded(
      (at) => {
        writeFileSync(at("a.txt"), "one\n");
        writeFileSync(at("b.txt"), "bee\n");
      },
      (at) => {
        writeFileSync(at("a.txt"), "two\n");
        writeFileSync(at("b.txt"), "BEE\n");
      },
    );
    const kept = join(
      rec.root,
      ".harness",
      "sessions",
      rec.sessionId,
      "artifacts",
      sha256Hex(Buffer.from("one\n")),
    );
    expect(existsSync(kept)).toBe(true);
    writeFileSync(kept, "evil\n");

    const report = await undoLastTurn(rec);
    const conflict = report.outcomes.find((o) => o.path === "a.txt");
    expect(conflict).toMatchObject({ outcome: "conflict" });
    expect(conflict?.outcome === "conflict" ? conflict.reason : "").toMatch(/ARTIFACT_CORRUPT/);
    expect(readFileSync(at("a.txt"), "utf8")).toBe("two\n");
    expect(readFileSync(at("b.txt"), "utf8")).toBe("bee\n");
    // The undo was journaled to its end: nothing is left half done for a later undo to "finish".
    const types = (await (await rec.writer()).readAll()).map((r) => r.type);
    expect(types.at(-1)).toBe("undo.finished");
  });

  it("a workspace.changed naming a path with .., an absolute path or .harness is refused when journaled", async () => {
    const rec = new Recording();
    current = rec;
    await rec.base();
    const writer = await rec.writer();
    const entry = { hash: "0".repeat(64), size: 1, exec: false };
    for (const path of ["../outside.txt", "/etc/passwd", "a/../../x", "a//b"]) {
      await expect(
        writer.append([
          {
            type: "workspace.changed",
            data: {
              call_id: "c",
              source: "shell",
              created: [{ path, after: entry }],
              modified: [],
              deleted: [],
            },
          },
        ]),
        path,
      ).rejects.toThrow();
    }
  });
});
