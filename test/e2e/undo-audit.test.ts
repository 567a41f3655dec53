import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mixedSession, type Recording, treeBytes } from "../undo/recording.js";
import { childEnv, ensureBuilt, expectExit, finished, harness, startHarness } from "./helpers.js";

beforeAll(() => ensureBuilt());

const made: Recording[] = [];
afterAll(() => {
  for (const rec of made) rmSync(rec.root, { recursive: true, force: true });
});

/** The mixed session recorded and closed (no writer holds it), with the tree after each call. */
async function recorded() {
  const session = await mixedSession();
  await session.rec.close();
  made.push(session.rec);
  return session;
}

const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>;

describe("harness undo", () => {
  it("puts the tree back to a record and says what it restored; the undo can itself be undone", async () => {
    const { rec, points } = await recorded();
    const undo = await harness(["undo", "s", "-w", rec.root, "--seq", String(points[0]!.seq), "--json"]);
    expectExit(undo, 0);
    const report = json(undo.stdout);
    expect(report).toMatchObject({
      session: "s1",
      target_seq: points[0]!.seq,
      resumed: false,
      dry_run: false,
      conflicts: [],
    });
    expect(report.restored).toContain("odd\nname");
    expect(treeBytes(rec.root)).toEqual(points[0]!.tree);
    const back = await harness(["undo", "s1", "-w", rec.root, "--to", `undo:${String(report.undo_id)}`]);
    expectExit(back, 0);
    expect(back.stdout).toMatch(/^undo of session s1: back to record \d+\n/);
    expect(back.stdout).toMatch(/restored {2}README\.md\n/);
    expect(back.stdout).toMatch(/deleted {3}data\.bin\n/);
    expect(back.stdout).toMatch(/recreated gen\n/);
    // Odd names reach the terminal escaped, never raw.
    expect(back.stdout).toContain("odd\\x0aname");
    expect(treeBytes(rec.root)).toEqual(points.at(-1)!.tree);
  });

  it("keeps a person's edit as a conflict and exits 1; --dry-run changes nothing", async () => {
    const { rec, points } = await recorded();
    writeFileSync(join(rec.root, "README.md"), "mine\n");
    const dry = await harness(["undo", "--last", "-w", rec.root, "--turn", "1", "--dry-run"]);
    expectExit(dry, 1);
    expect(dry.stdout).toMatch(/conflict {2}README\.md: changed since/);
    expect(dry.stdout).toContain("would restore");
    const mine = treeBytes(rec.root);
    expect(mine["README.md"]).toBe(`-:${Buffer.from("mine\n").toString("hex")}`);
    const undo = await harness(["undo", "s1", "-w", rec.root, "--turn", "1"]);
    expectExit(undo, 1);
    expect(undo.stdout).toMatch(/conflict {2}README\.md: changed since .*; left alone/);
    const tree = treeBytes(rec.root);
    expect(tree["README.md"]).toBe(mine["README.md"]);
    expect({ ...tree, "README.md": "" }).toEqual({ ...points[0]!.tree, "README.md": "" });
  });

  it("is refused while the session's writer is open (exit 5), and names bad targets (exit 64)", async () => {
    const { rec } = await recorded();
    await rec.writer();
    try {
      const locked = await harness(["undo", "s1", "-w", rec.root]);
      expectExit(locked, 5);
    } finally {
      await rec.close();
    }
    const bad = await harness(["undo", "s1", "-w", rec.root, "--to", "nope"]);
    expectExit(bad, 64);
    expect(bad.stderr).toContain('no call "nope"');
    const both = await harness(["undo", "s1", "-w", rec.root, "--turn", "1", "--seq", "2"]);
    expectExit(both, 64);
  });
});

describe("harness audit", () => {
  it("passes when the workspace is its base plus every recorded change, and lists files changed outside (exit 1)", async () => {
    const { rec } = await recorded();
    const clean = await harness(["audit", "s1", "-w", rec.root]);
    expectExit(clean, 0);
    expect(clean.stdout).toContain("authenticated by your key");
    expect(clean.stdout).toContain("the workspace matches the record");
    writeFileSync(join(rec.root, "README.md"), "changed by someone\n");
    writeFileSync(join(rec.root, "stray.txt"), "new\n");
    rmSync(join(rec.root, "bin/run.sh"));
    const dirty = await harness(["audit", "s1", "-w", rec.root, "--json"]);
    expectExit(dirty, 1);
    expect(json(dirty.stdout)).toMatchObject({
      session: "s1",
      journal: { ok: true, trusted: true },
      outside: { created: ["stray.txt"], modified: ["README.md"], deleted: ["bin/run.sh"] },
    });
    const human = await harness(["audit", "s1", "-w", rec.root]);
    expect(human.stdout).toContain("  modified  README.md");
    expect(human.stdout).toContain("3 file(s) changed outside the session's record");
  });

  it("reports a journal that is not the user's (exit 5)", async () => {
    const { rec } = await recorded();
    const otherKey = join(mkdtempSync(join(tmpdir(), "harness-other-key-")), "journal.key");
    const result = await finished(
      startHarness(["audit", "s1", "-w", rec.root], { env: { ...childEnv(), HARNESS_KEY_FILE: otherKey } }),
    );
    expectExit(result, 5);
    expect(result.stdout).toContain("UNTRUSTED");
  });
});

describe("harness fork --into", () => {
  it("writes the parent's exact tree at the record into DIR, and the fork audits clean there", async () => {
    const { rec, points } = await recorded();
    for (const index of [2, points.length - 1]) {
      const dir = join(mkdtempSync(join(tmpdir(), "harness-fork-into-")), "copy");
      const fork = await harness([
        "fork",
        "s1",
        "-w",
        rec.root,
        "--at",
        String(points[index]!.seq),
        "--into",
        dir,
        "--session",
        "f1",
        "--json",
      ]);
      expectExit(fork, 0);
      expect(json(fork.stdout)).toMatchObject({
        session: "f1",
        parent: "s1",
        at_seq: points[index]!.seq,
        workspace: dir,
      });
      expect(treeBytes(dir)).toEqual(points[index]!.tree);
      const audit = await harness(["audit", "f1", "-w", dir]);
      expectExit(audit, 0);
      // The parent's workspace has no session f1: the fork lives in DIR.
      expect(readdirSync(join(rec.root, ".harness", "sessions"))).toEqual(["s1"]);
    }
  });

  it("refuses a DIR that is not empty, and leaves DIR empty when a file's content then is recorded nowhere", async () => {
    const { rec, points } = await recorded();
    const full = mkdtempSync(join(tmpdir(), "harness-fork-full-"));
    writeFileSync(join(full, "x"), "x");
    const refused = await harness(["fork", "s1", "-w", rec.root, "--into", full]);
    expectExit(refused, 64);
    expect(refused.stderr).toContain("is not empty");
    // The session created this file and never changed it again: its bytes are only in the workspace.
    writeFileSync(join(rec.root, "node_modules/pkg/index.js"), "changed outside\n");
    const dir = mkdtempSync(join(tmpdir(), "harness-fork-empty-"));
    mkdirSync(join(dir, "sub"));
    rmSync(join(dir, "sub"), { recursive: true });
    const lost = await harness(["fork", "s1", "-w", rec.root, "--at", String(points[3]!.seq), "--into", dir]);
    expectExit(lost, 64);
    expect(lost.stderr).toContain("node_modules/pkg/index.js");
    expect(readdirSync(dir)).toEqual([]);
  });
});
