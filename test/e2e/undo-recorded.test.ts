import { chmodSync, cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliEnv, runCli } from "../e2e-providers/cli.js";
import { treeBytes as fileBytes } from "../undo/recording.js";
import {
  ensureBuilt,
  expectExit,
  journalFile,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * Undo, audit and fork --into on sessions harness itself recorded: file tools and shell commands
 * that install, generate, rename and delete files (binary ones, odd names, exec bits, a symlink),
 * over two turns. The scripted model photographs the tree's exact bytes at every request, which
 * is after every call, together with the journal's last record at that moment.
 */

beforeAll(() => ensureBuilt());
afterAll(() => removeTempDirs());

const INSTALL = [
  "mkdir -p node_modules/pkg/bin",
  "printf 'module.exports = 1;' > node_modules/pkg/index.js",
  "printf '\\000\\001\\377' > node_modules/pkg/blob.bin",
  "printf '#!/bin/sh\\n' > node_modules/pkg/bin/cli",
  "chmod +x node_modules/pkg/bin/cli",
].join(" && ");
const GENERATE = [
  "rm data.bin",
  'mv "old name.txt" "new name.txt"',
  "printf a > \"$(printf 'odd\\nname')\"",
  "printf b > ./-rf",
  "chmod -x run.sh",
  "ln -sfn hello.txt link",
  "head -c 3000 /dev/urandom > gen.bin",
].join(" && ");

const STEPS = `[
  { calls: [{ id: "w1", name: "write_file", arguments: { path: "src/new.ts", content: "export const x = 1;\\n" } }] },
  { calls: [{ id: "r1", name: "read_file", arguments: { path: "hello.txt" } }] },
  { calls: [{ id: "e1", name: "edit_file", arguments: { path: "hello.txt", old_text: "wrld", new_text: "world" } }] },
  { calls: [{ id: "sh1", name: "shell", arguments: { command: ${JSON.stringify(INSTALL)} } }] },
  { calls: [{ id: "sh2", name: "shell", arguments: { command: ${JSON.stringify(GENERATE)} } }] },
  { text: "turn one done" },
  { calls: [{ id: "sh3", name: "shell", arguments: { command: "rm -r node_modules && printf 'hello again\\\\n' > hello.txt" } }] },
  { calls: [{ id: "w2", name: "write_file", arguments: { path: "src/new.ts", content: "export const x = 2;\\n" } }] },
  { text: "turn two done" },
]`;

/** Empty directories made and removed, nested, by shell commands and by a file tool's write. */
const DIR_STEPS = JSON.stringify([
  { calls: [{ id: "d1", name: "shell", arguments: { command: "mkdir -p a/b/c empty keep/x" } }] },
  { calls: [{ id: "d2", name: "write_file", arguments: { path: "new/deep/file.txt", content: "n\n" } }] },
  {
    calls: [
      { id: "d3", name: "shell", arguments: { command: "rmdir a/b/c && rm -r new && mkdir -p a/b/d/e" } },
    ],
  },
  {
    calls: [
      {
        id: "d4",
        name: "shell",
        arguments: { command: "rmdir keep/x was-empty && rm base/f && mkdir base/sub" },
      },
    ],
  },
  { calls: [{ id: "d5", name: "shell", arguments: { command: "rm -r a && printf x > a" } }] },
  { text: "turn one done" },
  {
    calls: [
      { id: "d6", name: "shell", arguments: { command: "rm a && mkdir -p a/z && rmdir base/sub base" } },
    ],
  },
  { text: "turn two done" },
]);

/**
 * The scripted model: it photographs the tree (every directory as "dir", every file's exec bit and
 * bytes, every link's target) with the journal's last record, then replies with the next step.
 */
function script(workspace: string, snaps: string, steps = STEPS): string {
  return `
import { appendFileSync, lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
const WS = ${JSON.stringify(workspace)};
const STEPS = ${steps};
function tree(dir, prefix, out) {
  for (const name of readdirSync(dir).sort()) {
    if (prefix === "" && name === ".harness") continue;
    const path = prefix === "" ? name : prefix + "/" + name;
    const full = join(dir, name);
    const info = lstatSync(full);
    if (info.isSymbolicLink()) out[path] = "link:" + readlinkSync(full);
    else if (info.isDirectory()) {
      out[path] = "dir";
      tree(full, path, out);
    } else out[path] = ((info.mode & 0o111) ? "x" : "-") + ":" + readFileSync(full).toString("hex");
  }
  return out;
}
export default async function (messages) {
  // Only the session this workspace records (a fork continued elsewhere is not photographed).
  if (process.argv.includes(WS)) {
    const lines = readFileSync(join(WS, ".harness/sessions/s/events.jsonl"), "utf8").split("\\n").filter(Boolean);
    appendFileSync(${JSON.stringify(snaps)}, JSON.stringify({ seq: lines.length - 1, tree: tree(WS, "", {}) }) + "\\n");
  }
  return STEPS[messages.filter((m) => m.role === "assistant").length] ?? { text: "nothing more" };
}
`;
}

interface Snap {
  seq: number;
  tree: Record<string, string>;
}

/** A workspace with a two-turn session `s` recorded by harness, and the tree at every request. */
async function recordedSession(
  options: { steps?: string; files?: Record<string, string>; dirs?: string[] } = {},
): Promise<{
  workspace: string;
  env: NodeJS.ProcessEnv;
  snaps: Snap[];
  model: string;
}> {
  const home = await tempDir("harness-undo-home-");
  const env = cliEnv(home, { HARNESS_KEY_FILE: process.env.HARNESS_KEY_FILE ?? "" });
  const workspace = await workspaceWith(
    options.files ?? { "hello.txt": "hello wrld\n", "old name.txt": "old\n" },
  );
  for (const dir of options.dirs ?? []) mkdirSync(join(workspace, dir), { recursive: true });
  if (options.steps === undefined) {
    writeFileSync(join(workspace, "data.bin"), Buffer.from([0, 1, 2, 255, 254, 10, 13]));
    writeFileSync(join(workspace, "run.sh"), "#!/bin/sh\necho hi\n");
    chmodSync(join(workspace, "run.sh"), 0o755);
    symlinkSync("data.bin", join(workspace, "link"));
  }
  const dir = await tempDir("harness-undo-script-");
  const snapsFile = join(dir, "snaps.jsonl");
  const model = join(dir, "model.mjs");
  await writeFile(model, script(workspace, snapsFile, options.steps));
  const flags = [
    "--script",
    model,
    "-w",
    workspace,
    "--session",
    "s",
    "--write",
    "allow",
    "--shell",
    "allow",
  ];
  expectExit(await runCli(["run", ...flags, "turn one"], env), 0);
  expectExit(await runCli(["run", ...flags, "turn two"], env), 0);
  const snaps = readFileSync(snapsFile, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Snap);
  return { workspace, env, snaps, model };
}

/** The tree as the scripted model photographs it: directories included. */
const treeBytes = (root: string) => fileBytes(root, { directories: true });

const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>;

describe("undo on a session harness recorded", { timeout: 180_000 }, () => {
  it("undo to each point restores the tree byte for byte; undoing that undo brings the end back", {
    timeout: 240_000,
  }, async () => {
    const { workspace, env, snaps } = await recordedSession();
    const end = treeBytes(workspace);
    expect(snaps.at(-1)!.tree).toEqual(end);
    expect(Object.keys(end)).toEqual(expect.arrayContaining(["odd\nname", "-rf", "gen.bin", "new name.txt"]));
    expect(snaps.length).toBe(9);
    for (const snap of snaps.slice(0, -1)) {
      const undo = await runCli(["undo", "s", "-w", workspace, "--seq", String(snap.seq), "--json"], env);
      expectExit(undo, 0);
      expect(treeBytes(workspace)).toEqual(snap.tree);
      const id = String(json(undo.stdout).undo_id);
      const back = await runCli(["undo", "s", "-w", workspace, "--to", `undo:${id}`, "--json"], env);
      expectExit(back, 0);
      expect(treeBytes(workspace)).toEqual(end);
    }
    // By default the last turn: the tree as turn one left it.
    expectExit(await runCli(["undo", "s", "-w", workspace], env), 0);
    expect(treeBytes(workspace)).toEqual(snaps[5]!.tree);
    const audit = await runCli(["audit", "s", "-w", workspace], env);
    expectExit(audit, 0);
  });

  it("keeps a person's edit as a conflict; audit names the file changed outside the record", async () => {
    const { workspace, env, snaps } = await recordedSession();
    expectExit(await runCli(["audit", "s", "-w", workspace], env), 0);
    writeFileSync(join(workspace, "hello.txt"), "a person's words\n");
    const audit = await runCli(["audit", "s", "-w", workspace, "--json"], env);
    expectExit(audit, 1);
    expect(json(audit.stdout).outside).toEqual({ created: [], modified: ["hello.txt"], deleted: [] });
    const undo = await runCli(["undo", "s", "-w", workspace, "--turn", "1", "--json"], env);
    expectExit(undo, 1);
    expect(json(undo.stdout).conflicts).toEqual([
      { path: "hello.txt", reason: "changed since the session's last recorded change; left alone" },
    ]);
    const tree = treeBytes(workspace);
    expect(tree["hello.txt"]).toBe(`-:${Buffer.from("a person's words\n").toString("hex")}`);
    expect({ ...tree, "hello.txt": "" }).toEqual({ ...snaps[0]!.tree, "hello.txt": "" });
  });

  it("an undo cut short after undo.started and some files is finished by the next harness undo, exactly once", async () => {
    const { workspace, env, snaps } = await recordedSession();
    const before = treeBytes(workspace);
    const saved = await tempDir("harness-undo-saved-");
    cpSync(workspace, saved, { recursive: true, verbatimSymlinks: true });
    const full = await runCli(["undo", "s", "-w", workspace, "--seq", String(snaps[0]!.seq), "--json"], env);
    expectExit(full, 0);
    // What a kill after undo.started and part of the files leaves: the journal up to undo.started,
    // some files restored, the others as the session left them.
    const journal = readFileSync(journalFile(workspace, "s"), "utf8").split("\n").filter(Boolean);
    const started = journal.findIndex((line) => line.includes('"type":"undo.started"'));
    writeFileSync(journalFile(workspace, "s"), `${journal.slice(0, started + 1).join("\n")}\n`);
    for (const path of ["hello.txt", "gen.bin", "src/new.ts"]) {
      rmSync(join(workspace, path), { force: true });
      cpSync(join(saved, path), join(workspace, path));
    }
    const partial = treeBytes(workspace);
    expect(partial).not.toEqual(before);
    expect(partial).not.toEqual(snaps[0]!.tree);
    const resumed = await runCli(["undo", "s", "-w", workspace, "--json"], env);
    expectExit(resumed, 0);
    expect(json(resumed.stdout)).toMatchObject({ resumed: true, target_seq: snaps[0]!.seq, conflicts: [] });
    expect(treeBytes(workspace)).toEqual(snaps[0]!.tree);
    const again = await runCli(["undo", "s", "-w", workspace, "--seq", String(snaps[0]!.seq), "--json"], env);
    expectExit(again, 0);
    expect(json(again.stdout).restored).toEqual([]);
    const records = await readJournal(workspace, "s");
    expect(ofType(records, "undo.started")).toHaveLength(1);
    expect(ofType(records, "undo.finished")).toHaveLength(1);
    expectExit(await runCli(["audit", "s", "-w", workspace], env), 0);
  });

  it("an undo cut short is finished by harness resume before the session goes on, exactly once", async () => {
    const { workspace, env, snaps, model } = await recordedSession();
    const saved = await tempDir("harness-undo-saved-");
    cpSync(workspace, saved, { recursive: true, verbatimSymlinks: true });
    expectExit(await runCli(["undo", "s", "-w", workspace, "--seq", String(snaps[0]!.seq)], env), 0);
    const journal = readFileSync(journalFile(workspace, "s"), "utf8").split("\n").filter(Boolean);
    const started = journal.findIndex((line) => line.includes('"type":"undo.started"'));
    writeFileSync(journalFile(workspace, "s"), `${journal.slice(0, started + 1).join("\n")}\n`);
    for (const path of ["hello.txt", "gen.bin"]) {
      rmSync(join(workspace, path), { force: true });
      cpSync(join(saved, path), join(workspace, path));
    }
    expect(treeBytes(workspace)).not.toEqual(snaps[0]!.tree);
    await runCli(["resume", "s", "-w", workspace, "--script", model], env);
    expect(treeBytes(workspace)).toEqual(snaps[0]!.tree);
    const records = await readJournal(workspace, "s");
    expect(ofType(records, "undo.started")).toHaveLength(1);
    expect(ofType(records, "undo.finished")).toHaveLength(1);
    // Finished before the session went on: no outside change was found for the half-restored files.
    const finished = records.findIndex((r) => r.type === "undo.finished");
    const resumed = records.findIndex((r) => r.type === "session.resumed");
    expect(finished).toBeGreaterThan(resumed);
    expect(ofType(records, "workspace.changed").filter((r) => r.data.source === "outside")).toEqual([]);
    const again = await runCli(["undo", "s", "-w", workspace, "--seq", String(snaps[0]!.seq), "--json"], env);
    expectExit(again, 0);
    expect(json(again.stdout).restored).toEqual([]);
    expectExit(await runCli(["audit", "s", "-w", workspace], env), 0);
  });

  it("fork --into materializes the exact tree at the record, and the fork continues there", async () => {
    const { workspace, env, snaps, model } = await recordedSession();
    const into = join(await tempDir("harness-fork-into-"), "copy");
    const fork = await runCli(
      [
        "fork",
        "s",
        "-w",
        workspace,
        "--at",
        String(snaps[4]!.seq),
        "--into",
        into,
        "--session",
        "f",
        "--json",
      ],
      env,
    );
    expectExit(fork, 0);
    expect(treeBytes(into)).toEqual(snaps[4]!.tree);
    expectExit(await runCli(["audit", "f", "-w", into], env), 0);
    expect(treeBytes(workspace)).toEqual(snaps.at(-1)!.tree);
    // Resumed in DIR (the workspace session.forked names), it runs the rest of turn one there.
    const resumed = await runCli(["resume", "f", "-w", into, "--script", model], env);
    expectExit(resumed, 0);
    expect(Object.keys(treeBytes(into))).toContain("gen.bin");
    expect(treeBytes(workspace)).toEqual(snaps.at(-1)!.tree);
    expectExit(await runCli(["audit", "f", "-w", into], env), 0);
  });

  it("empty directories made and removed, nested, are in the record: undo to every point gives the exact tree, directories included", {
    timeout: 240_000,
  }, async () => {
    const { workspace, env, snaps } = await recordedSession({
      steps: DIR_STEPS,
      files: { "base/f": "f\n", "top.txt": "t\n" },
      dirs: ["was-empty"],
    });
    const end = treeBytes(workspace);
    expect(snaps.length).toBe(8);
    expect(snaps.at(-1)!.tree).toEqual(end);
    expect(snaps[0]!.tree).toEqual({
      base: "dir",
      "base/f": `-:${Buffer.from("f\n").toString("hex")}`,
      "top.txt": `-:${Buffer.from("t\n").toString("hex")}`,
      "was-empty": "dir",
    });
    expect(snaps[1]!.tree).toMatchObject({
      a: "dir",
      "a/b": "dir",
      "a/b/c": "dir",
      empty: "dir",
      "keep/x": "dir",
    });
    expect(end).toMatchObject({ a: "dir", "a/z": "dir", empty: "dir", keep: "dir" });
    // Each directory is recorded as the call that made or removed it, the file tool's too.
    const records = await readJournal(workspace, "s");
    const changes = ofType(records, "workspace.changed");
    expect(changes.filter((r) => r.data.source === "outside")).toEqual([]);
    type Change = { created: { path: string }[]; modified: unknown[]; deleted: { path: string }[] };
    const byCall = (id: string) => changes.find((r) => r.data.call_id === id)!.data as unknown as Change;
    expect(byCall("d1").created.map((c) => c.path)).toEqual(["a", "a/b", "a/b/c", "empty", "keep", "keep/x"]);
    expect(byCall("d2").created).toEqual([
      { path: "new", after: { dir: true } },
      { path: "new/deep", after: { dir: true } },
      { path: "new/deep/file.txt", after: expect.objectContaining({ size: 2 }) },
    ]);
    expect(byCall("d4").deleted.map((c) => c.path)).toEqual(["base/f", "keep/x", "was-empty"]);
    expect(byCall("d5").modified).toEqual([
      { path: "a", before: { dir: true }, after: expect.objectContaining({ size: 1 }) },
    ]);
    for (const snap of snaps.slice(0, -1)) {
      const undo = await runCli(["undo", "s", "-w", workspace, "--seq", String(snap.seq), "--json"], env);
      expectExit(undo, 0);
      expect(treeBytes(workspace), `undo to ${snap.seq}`).toEqual(snap.tree);
      expectExit(await runCli(["audit", "s", "-w", workspace], env), 0);
      const id = String(json(undo.stdout).undo_id);
      const back = await runCli(["undo", "s", "-w", workspace, "--to", `undo:${id}`, "--json"], env);
      expectExit(back, 0);
      expect(treeBytes(workspace)).toEqual(end);
    }
    // fork --into writes the empty directories of the point too.
    const into = join(await tempDir("harness-fork-into-"), "copy");
    const fork = await runCli(
      ["fork", "s", "-w", workspace, "--at", String(snaps[3]!.seq), "--into", into, "--session", "f"],
      env,
    );
    expectExit(fork, 0);
    expect(treeBytes(into)).toEqual(snaps[3]!.tree);
    expectExit(await runCli(["audit", "f", "-w", into], env), 0);
    // A directory someone else makes, empty, is a change outside the record.
    mkdirSync(join(workspace, "by-hand/deeper"), { recursive: true });
    const audit = await runCli(["audit", "s", "-w", workspace, "--json"], env);
    expectExit(audit, 1);
    expect(json(audit.stdout).outside).toEqual({
      created: ["by-hand", "by-hand/deeper"],
      modified: [],
      deleted: [],
    });
    const text = await runCli(["audit", "s", "-w", workspace], env);
    expectExit(text, 1);
    expect(text.stdout).toContain("  created   by-hand/\n  created   by-hand/deeper/");
  });
});
