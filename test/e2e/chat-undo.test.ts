import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { jsonScript, ofType, readJournal, workspaceWith } from "./helpers.js";
import { terminalFixture } from "./tmux.js";

/** /undo in the chat, driven in a real pseudo-terminal: the files on disk and the journal judge it. */
describe("the chat's /undo", () => {
  const terminal = terminalFixture("harness-chat-undo-config-");

  it("puts the last turn's file changes back and says how many", async () => {
    const workspace = await workspaceWith({ "hello.txt": "hello wrld\n" });
    const script = await jsonScript([
      { calls: [{ id: "r1", name: "read_file", arguments: { path: "hello.txt" } }] },
      {
        calls: [
          { id: "w1", name: "write_file", arguments: { path: "new.txt", content: "made by the agent\n" } },
          {
            id: "e1",
            name: "edit_file",
            arguments: { path: "hello.txt", old_text: "wrld", new_text: "world" },
          },
        ],
      },
      { text: "Done.", calls: [] },
    ]);
    const session = await terminal.chat(workspace, ["chat", "--script", script, "--write", "allow"]);
    session.type("fix it");
    session.press("Enter");
    const done = await session.waitFor("Done.");
    const id = /session (\S+) ·/.exec(done)?.[1] ?? "";
    await session.waitFor("Ctrl-D exits");
    expect(await readFile(join(workspace, "hello.txt"), "utf8")).toBe("hello world\n");
    session.type("/undo");
    session.press("Enter");
    // The picker opens on the last turn: Enter undoes it.
    await session.waitFor("Enter picks · Esc cancels");
    session.press("Enter");
    await session.waitFor(/restored 2 file\(s\) \(undo it with --to undo:\w+\)/);
    expect(await readFile(join(workspace, "hello.txt"), "utf8")).toBe("hello wrld\n");
    await expect(readFile(join(workspace, "new.txt"))).rejects.toThrow(/ENOENT/);
    session.press("C-d");
    await session.waitFor("[exited 0]");
    const journal = await readJournal(workspace, id);
    expect(ofType(journal, "undo.finished").map((r) => r.data)).toEqual([
      { undo_id: expect.any(String), restored: 2, conflicts: [] },
    ]);
  });
});
