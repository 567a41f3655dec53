import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  harness,
  jsonScript,
  jsonSummary,
  ofType,
  pasteAsPrinted,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A scripted model that, in every turn, reads notes.txt and edits "draft" to "final". */
const EDIT_EACH_TURN = `
export default function (messages) {
  const last = messages.at(-1);
  if (last.role !== "tool") return { calls: [{ id: "r" + messages.length, name: "read_file", arguments: { path: "notes.txt" } }] };
  if (last.name === "read_file")
    return { calls: [{ id: "e" + messages.length, name: "edit_file", arguments: { path: "notes.txt", old_text: "draft", new_text: "final" } }] };
  return { text: "edited" };
}
`;

/** The printed hint, run by a shell as a person pastes it, from a directory that is not the workspace. */
const paste = (hint: string, cwd: string) => pasteAsPrinted(hint, cwd);

describe("the changes_denied hint", () => {
  it("repeats every flag of the run, recorded or not, and works as printed", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const script = join(await tempDir("harness-script-"), "edit.mjs");
    await writeFile(script, EDIT_EACH_TURN);
    const elsewhere = await tempDir("harness-cwd-");
    const denied = await harness(
      [
        "run",
        "--script",
        script,
        "--workspace",
        workspace,
        "--max-tool-calls",
        "9",
        "--tools",
        "coding",
        "--read-path",
        "notes.txt",
        "--edit-path",
        "notes.txt",
        "--write",
        "deny",
        "--json",
        "finalise the notes",
      ],
      { cwd: elsewhere },
    );
    expect(denied.code).toBe(2);
    const summary = jsonSummary(denied);
    expect([summary.status, summary.reason]).toEqual(["stopped", "changes_denied"]);
    expect(summary.allow).toEqual([["--write", "allow"]]);
    const [hint] = summary.next as string[];
    expect(hint).toContain("--max-tool-calls 9");
    expect(hint).toContain("--tools coding");
    expect(hint).toContain("--read-path notes.txt");
    expect(hint).toContain("--write allow");
    expect(hint).not.toContain("--write deny");
    expect(hint).toContain("'finalise the notes'");

    const again = await paste(`${hint!} --json`, elsewhere);
    expect(again.code).toBe(0);
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: final\n");
    // The new session was set up as the first one was, with the one flag changed.
    const id = jsonSummary(again).session as string;
    const started = ofType(await readJournal(workspace, id), "session.started")[0]?.data.options;
    expect(started).toMatchObject({
      tools: "coding",
      readPaths: ["notes.txt"],
      editPaths: ["notes.txt"],
      write: "allow",
    });
  });

  it("after a later turn: decided on that turn, it repeats the flags the session recorded and that turn's prompt", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const script = join(await tempDir("harness-script-"), "edit.mjs");
    // Only a prompt that asks to finalise edits; any other turn only reads.
    await writeFile(
      script,
      EDIT_EACH_TURN.replace(
        'if (last.name === "read_file")',
        'const asked = messages.filter((m) => m.role === "user").at(-1).content;\n  if (last.name === "read_file" && asked.includes("finalise"))',
      ),
    );
    const elsewhere = await tempDir("harness-cwd-");
    const first = await harness(
      [
        "run",
        "--script",
        script,
        "--workspace",
        workspace,
        "--write",
        "deny",
        "--tools",
        "files",
        "--json",
        "look",
      ],
      { cwd: elsewhere },
    );
    expect([jsonSummary(first).status, jsonSummary(first).reason]).toEqual(["unverified", null]);
    // Turn 2 is given only the script: the rest comes from the journal.
    const second = await harness(
      ["run", "--continue", "--script", script, "--workspace", workspace, "--json", "now finalise them"],
      { cwd: elsewhere },
    );
    const summary = jsonSummary(second);
    expect([summary.status, summary.reason]).toEqual(["stopped", "changes_denied"]);
    const [hint] = summary.next as string[];
    expect(hint).toContain("--tools files");
    expect(hint).toContain("'now finalise them'");
    const again = await paste(`${hint!} --json`, elsewhere);
    expect(again.code).toBe(0);
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: final\n");
  });
});

describe("the acceptance_failed hint after denied changes", () => {
  it("names --shell allow when a command was denied and the check then failed; the printed run works", async () => {
    const workspace = await workspaceWith({});
    // The check needs a file only a command makes; the edit tools are not offered to the model.
    const script = await jsonScript([
      { calls: [{ id: "s1", name: "shell", arguments: { command: "echo built > out.txt" } }] },
      { text: "built it" },
    ]);
    const elsewhere = await tempDir("harness-cwd-");
    const failed = await harness(
      [
        "run",
        "--script",
        script,
        "--workspace",
        workspace,
        "--tools",
        "shell-only",
        "--shell",
        "deny",
        "--accept",
        "test -f out.txt",
        "build it",
      ],
      { cwd: elsewhere },
    );
    expect(failed.code).toBe(2);
    expect(failed.stdout).toMatch(/status {4}stopped \(acceptance_failed\)/);
    expect(failed.stdout).toContain(
      "1 change(s) it tried were denied (shell): to allow them, run again with --shell allow",
    );
    const hint = /^next {6}(harness run .*)$/m.exec(failed.stdout)?.[1];
    expect(hint).toContain("--shell allow");
    expect(hint).not.toContain("--shell deny");
    expect(hint).toContain("--accept 'test -f out.txt'");
    expect(hint).toContain("'build it'");
    const journal = await readJournal(workspace, /^session {3}(\S+)$/m.exec(failed.stdout)?.[1] ?? "");
    expect(ofType(journal, "run.stopped")[0]?.data.allow).toEqual([["--shell", "allow"]]);

    const again = await paste(`${hint!} --json`, elsewhere);
    expect(again.code).toBe(0);
    expect(jsonSummary(again).status).toBe("verified");
    expect(await readFile(join(workspace, "out.txt"), "utf8")).toBe("built\n");
  });

  it("names --write allow when an edit was denied", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const script = join(await tempDir("harness-script-"), "edit.mjs");
    await writeFile(script, EDIT_EACH_TURN);
    const failed = await harness([
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--write",
      "deny",
      "--accept",
      "grep -q final notes.txt",
      "--json",
      "finalise the notes",
    ]);
    expect(failed.code).toBe(2);
    const summary = jsonSummary(failed);
    expect([summary.status, summary.reason, summary.allow]).toEqual([
      "stopped",
      "acceptance_failed",
      [["--write", "allow"]],
    ]);
    const [hint] = summary.next as string[];
    const again = await paste(`${hint!} --json`, await tempDir("harness-cwd-"));
    expect(jsonSummary(again).status).toBe("verified");
  });
});
