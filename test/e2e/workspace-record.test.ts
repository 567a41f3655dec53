import { readFileSync, writeFileSync } from "node:fs";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/shared/hash.js";
import { parseManifest } from "../../src/workspace/manifest.js";
import { runCli } from "../e2e-providers/cli.js";
import { userEnv } from "../support/user-env.js";
import {
  ensureBuilt,
  expectExit,
  type JournalLine,
  ofType,
  readJournal,
  removeTempDirs,
  sessionDir,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * Every effect on the workspace is in the journal: the base tree at the start, each file tool's
 * write, what each shell command and acceptance command changed (found by comparing the tree
 * before and after), and changes nobody in the session made. Every `before` is kept: its bytes are
 * in the session's artifacts, named by their hash.
 */

beforeAll(() => ensureBuilt());
/** Several CLI processes per test, each starting a sandbox: minutes on a loaded machine. */
const SLOW = 180_000;
afterAll(() => removeTempDirs());

const INITIAL: Record<string, string> = {
  "hello.txt": "hello\n",
  "same.txt": "12345678",
  "old.txt": "gone soon\n",
  "rename-me.txt": "moving\n",
  "tool.sh": "#!/bin/sh\n",
};

// One shell call that creates, modifies (same size, mtime put back with touch -r), deletes,
// renames, sets an exec bit, writes a binary file and files with odd names, and an empty directory.
const SHELL = [
  'ref="$(mktemp)"',
  'touch -r same.txt "$ref"',
  "printf ABCDEFGH > same.txt",
  'touch -r "$ref" same.txt',
  "rm old.txt",
  "mv rename-me.txt renamed.txt",
  "chmod +x tool.sh",
  "printf '\\000\\001\\377' > bin.dat",
  "printf a > \"$(printf 'odd\\nname')\"",
  "printf b > ./-rf",
  "mkdir -p empty/dir",
].join(" && ");

const SCRIPT = `
const STEPS = [
  { calls: [{ id: "w1", name: "write_file", arguments: { path: "new.txt", content: "new file\\n" } }] },
  { calls: [{ id: "r1", name: "read_file", arguments: { path: "hello.txt" } }] },
  { calls: [{ id: "e1", name: "edit_file", arguments: { path: "hello.txt", old_text: "hello", new_text: "bye" } }] },
  { calls: [{ id: "quiet", name: "shell", arguments: { command: "cat hello.txt" } }] },
  { calls: [{ id: "sh1", name: "shell", arguments: { command: ${JSON.stringify(SHELL)} } }] },
];
export default async function (messages) {
  if (messages.filter((m) => m.role === "user").length > 1) return { text: "second turn" };
  return STEPS[messages.filter((m) => m.role === "assistant").length] ?? { text: "done" };
}
`;

const file = (text: string | Buffer, exec = false) => ({
  hash: sha256Hex(text),
  size: Buffer.byteLength(text),
  exec,
});

/** The workspace.changed records with their seq (their data as the journal holds it). */
function changes(records: readonly JournalLine[]): ({ seq: number } & Record<string, unknown>)[] {
  return ofType(records, "workspace.changed").map((r) => ({ seq: r.seq, ...r.data }));
}

describe("the workspace record of a session", () => {
  it(
    "journals the base, file tool writes, shell and acceptance effects, and keeps every before",
    async () => {
      const env = await userEnv("record");
      const workspace = await workspaceWith(INITIAL);
      const script = join(await tempDir("harness-record-script-"), "model.mjs");
      await writeFile(script, SCRIPT);
      const args = ["run", "--script", script, "-w", workspace, "--session", "s", "--write", "allow"];
      const first = await runCli(
        [...args, "--shell", "allow", "--accept", "printf ok > accepted.txt", "record everything"],
        env,
      );
      expectExit(first, 0);
      const records = await readJournal(workspace, "s");
      const artifacts = join(sessionDir(workspace, "s"), "artifacts");

      // The base: once, before the first model request, naming a manifest of the initial tree.
      const [base, ...moreBases] = ofType(records, "workspace.base");
      expect(moreBases).toEqual([]);
      const firstRequest = records.find((r) => r.type === "model.started");
      expect(base!.seq).toBeLessThan(firstRequest!.seq);
      expect(base!.data).toMatchObject({ files: 5, bytes: 41, excluded: ["/.git/", "/.harness/"] });
      const manifest = parseManifest(readFileSync(join(artifacts, base!.data.manifest as string)));
      expect(Object.fromEntries(manifest)).toEqual(
        Object.fromEntries(Object.entries(INITIAL).map(([path, text]) => [path, file(text)])),
      );

      const recorded = changes(records);
      const acceptanceSeq = recorded.at(-1)!.seq;
      expect(recorded.map(({ seq: _seq, ...data }) => data)).toEqual([
        {
          call_id: "w1",
          source: "tool",
          created: [{ path: "new.txt", after: file("new file\n") }],
          modified: [],
          deleted: [],
        },
        {
          call_id: "e1",
          source: "tool",
          created: [],
          modified: [{ path: "hello.txt", before: file("hello\n"), after: file("bye\n") }],
          deleted: [],
        },
        {
          call_id: "sh1",
          source: "shell",
          created: [
            { path: "-rf", after: file("b") },
            { path: "bin.dat", after: file(Buffer.from([0, 1, 255])) },
            { path: "empty", after: { dir: true } },
            { path: "empty/dir", after: { dir: true } },
            { path: "odd\nname", after: file("a") },
            { path: "renamed.txt", after: file("moving\n") },
          ],
          modified: [
            { path: "same.txt", before: file("12345678"), after: file("ABCDEFGH") },
            { path: "tool.sh", before: file("#!/bin/sh\n"), after: file("#!/bin/sh\n", true) },
          ],
          deleted: [
            { path: "old.txt", before: file("gone soon\n") },
            { path: "rename-me.txt", before: file("moving\n") },
          ],
        },
        {
          call_id: `acceptance:${acceptanceSeq}`,
          source: "acceptance",
          created: [{ path: "accepted.txt", after: file("ok") }],
          modified: [],
          deleted: [],
        },
      ]);
      // A shell call that changed nothing has no record; each record precedes its call's result.
      for (const change of recorded.slice(0, 3)) {
        const result = records.find((r) => r.type === "tool.result" && r.data.call_id === change.call_id);
        expect(result!.seq).toBe(change.seq + 1);
      }
      expect(records.find((r) => r.seq === acceptanceSeq + 1)?.type).toBe("acceptance.checked");

      // inspect shows them, odd names escaped; journal verify finds every kept content.
      const inspect = await runCli(["inspect", "s", "--workspace", workspace], env);
      expectExit(inspect, 0);
      expect(inspect.stdout).toContain("workspace base: 5 files, 41 bytes");
      expect(inspect.stdout).toContain(
        "workspace changed by shell sh1: +-rf +bin.dat +empty/ +empty/dir/ +odd\\x0aname and 5 more",
      );
      const verify = await runCli(["journal", "verify", "s", "--workspace", workspace], env);
      expectExit(verify, 0);
      expect(verify.stdout).toContain("intact");

      // Every before's bytes are kept, named by their hash, equal to the file's earlier bytes.
      const befores = recorded.flatMap((c) => [
        ...(c.modified as { before: { hash: string } }[]),
        ...(c.deleted as { before: { hash: string } }[]),
      ]);
      expect(befores).toHaveLength(5);
      const earlier = new Map(Object.values(INITIAL).map((text) => [sha256Hex(text), text]));
      for (const { before } of befores) {
        expect((await readFile(join(artifacts, before.hash))).toString()).toBe(earlier.get(before.hash));
      }
    },
    SLOW,
  );

  it(
    "journals a change nobody in the session made as outside, at the next turn's start",
    async () => {
      const env = await userEnv("record");
      const workspace = await workspaceWith({ "notes.txt": "mine\n", "doomed.txt": "x\n" });
      const script = join(await tempDir("harness-record-script-"), "model.mjs");
      await writeFile(script, 'export default async () => ({ text: "nothing to do" });');
      const args = ["run", "--script", script, "-w", workspace, "--session", "s"];
      expectExit(await runCli([...args, "first"], env), 0);

      // A person edits one file and deletes another between the turns.
      writeFileSync(join(workspace, "notes.txt"), "MINE\n");
      await rm(join(workspace, "doomed.txt"));
      expectExit(await runCli([...args, "second"], env), 0);

      const records = await readJournal(workspace, "s");
      const recorded = changes(records);
      expect(recorded).toEqual([
        {
          seq: recorded[0]!.seq,
          call_id: `outside:${recorded[0]!.seq}`,
          source: "outside",
          created: [],
          modified: [{ path: "notes.txt", before: file("mine\n"), after: file("MINE\n") }],
          deleted: [{ path: "doomed.txt", before: file("x\n") }],
        },
      ]);
      const secondTurn = ofType(records, "user.input")[1]!;
      expect(recorded[0]!.seq).toBeGreaterThan(secondTurn.seq);
      const artifacts = join(sessionDir(workspace, "s"), "artifacts");
      expect((await readFile(join(artifacts, sha256Hex("mine\n")))).toString()).toBe("mine\n");
      expect((await readFile(join(artifacts, sha256Hex("x\n")))).toString()).toBe("x\n");
      expect(ofType(records, "workspace.base")).toHaveLength(1);

      // A kept before-content that goes missing is what journal verify reports.
      await rm(join(artifacts, sha256Hex("x\n")));
      const verify = await runCli(["journal", "verify", "s", "--workspace", workspace], env);
      expect(verify.code).not.toBe(0);
      expect(verify.stdout).toContain(
        `artifact ${sha256Hex("x\n")} is referenced by the journal but missing`,
      );
    },
    SLOW,
  );
});
