import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Recording } from "../undo/recording.js";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
  jsonScript,
  jsonSummary,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * `harness fork --into DIR` of a session whose directory became a link. A record made before host
 * reads went beneath the workspace can hold a file below that link (the walk read through it); the
 * fork must refuse such a tree with a clear error and exit 64, write nothing (DIR removed again
 * when the fork made it, left empty when it was given empty), and never end in a stack trace. A
 * session recorded now holds the link alone, and forks.
 */

beforeAll(() => ensureBuilt());
const made: string[] = [];
afterAll(async () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  await removeTempDirs();
});

/** A session whose record holds `d` as a link and, below it, the file the link's target had. */
async function brokenRecord(): Promise<Recording> {
  const rec = new Recording("s1", true);
  made.push(rec.root);
  mkdirSync(join(rec.root, "d"));
  writeFileSync(join(rec.root, "d/journal.key"), "placeholder\n");
  await rec.base();
  await rec.turn(1);
  const writer = await rec.writer();
  await writer.append([
    {
      type: "workspace.changed",
      data: {
        call_id: "outside:9",
        source: "outside",
        created: [],
        modified: [{ path: "d", before: { dir: true }, after: { link: "/home/user/.config/harness" } }],
        deleted: [],
      },
    },
  ]);
  await rec.close();
  return rec;
}

function noStackTrace(stderr: string): void {
  expect(stderr).not.toMatch(/^\s+at /m);
  expect(stderr).not.toContain("internal error");
}

describe("harness fork --into of a session whose directory became a link", () => {
  it("a record with a file below the link: exit 64, a clear error, nothing written (a new DIR removed again)", async () => {
    const rec = await brokenRecord();
    const into = join(mkdtempSync(join(tmpdir(), "harness-fork-parent-")), "new");
    made.push(join(into, ".."));
    const result = await harness(["fork", "s1", "-w", rec.root, "--into", into, "--session", "f1"]);
    expectExit(result, 64);
    noStackTrace(result.stderr);
    expect(result.stderr).toContain("cannot write the tree of s1 into");
    expect(result.stderr).toContain('holds "d/journal.key" below "d", which is not a directory');
    expect(existsSync(into)).toBe(false);
    // The parent session is untouched and has no fork beside it.
    expect(readdirSync(join(rec.root, ".harness/sessions"))).toEqual(["s1"]);
  });

  it("given an empty DIR, it is left empty", async () => {
    const rec = await brokenRecord();
    const into = mkdtempSync(join(tmpdir(), "harness-fork-into-"));
    made.push(into);
    const result = await harness(["fork", "s1", "-w", rec.root, "--into", into, "--json"]);
    expectExit(result, 64);
    noStackTrace(result.stderr);
    expect(result.stdout).toBe("");
    expect(readdirSync(into)).toEqual([]);
  });

  it("a session recorded now holds the link alone and forks, the link written as a link", async () => {
    const workspace = await workspaceWith({ "notes.txt": "notes\n" });
    const outside = await tempDir("harness-user-dir-");
    await writeFile(join(outside, "journal.key"), "outside secret\n");
    const config = join(await tempDir("harness-config-"), "config.json");
    await writeFile(config, "{}\n");
    const script = await jsonScript([
      { calls: [{ id: "s1", name: "shell", arguments: { command: "mkdir d && echo x > d/journal.key" } }] },
      { calls: [{ id: "s2", name: "shell", arguments: { command: `rm -rf d && ln -s '${outside}' d` } }] },
      { text: "done" },
    ]);
    const run = await finished(
      startHarness(
        ["run", "--script", script, "--workspace", workspace, "--shell", "allow", "--json", "go"],
        { env: { ...childEnv(), HARNESS_CONFIG: config } },
      ),
    );
    expectExit(run, 0);
    const id = String(jsonSummary(run).session);
    const into = join(await tempDir("harness-fork-parent-"), "new");
    const fork = await harness(["fork", id, "-w", workspace, "--into", into, "--json"]);
    expectExit(fork, 0);
    noStackTrace(fork.stderr);
    expect(lstatSync(join(into, "d")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(into, "d"))).toBe(outside);
    expect(readdirSync(into).sort()).toEqual([".harness", "d", "notes.txt"]);
  });
});
