import { chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BIN, fixture, journalFile, ofType, readJournal, tempDir, workspaceWith } from "./helpers.js";
import { TmuxSession, terminalFixture } from "./tmux.js";

/**
 * /undo (its picker, N, --to ID), /redo, /diff, /sessions, the exit line's command and chat -c,
 * driven in a real pseudo-terminal: the files on disk, the screen and the journal judge them.
 * The scripted model (chat-files.mjs) writes and edits files as each message tells it.
 */
describe("the chat's history: undo, redo, diff, sessions, continuing", () => {
  const terminal = terminalFixture("harness-chat-history-config-");
  const SCRIPT = fixture("chat-files.mjs");

  function chat(workspace: string, ...flags: string[]): Promise<TmuxSession> {
    return terminal.chat(workspace, ["chat", "--script", SCRIPT, "--write", "allow", ...flags]);
  }

  /** Send a message (or a slash command) and wait for what shows it was handled. */
  async function send(session: TmuxSession, text: string, until: string | RegExp): Promise<string> {
    session.type(text);
    session.press("Enter");
    return session.waitFor(until);
  }

  const sessionIdOn = (screen: string) => /session (\S+) ·/.exec(screen)?.[1] ?? "";
  const read = (workspace: string, path: string) => readFile(join(workspace, path), "utf8");
  const count = (screen: string, text: string) => screen.split(text).length - 1;

  /** Two turns: turn 1 makes a.txt and fixes hello.txt, turn 2 makes b.txt and edits a.txt. */
  async function twoTurns(workspace: string): Promise<TmuxSession> {
    const session = await chat(workspace);
    await send(session, "write a.txt one; edit hello.txt wrld world", "done: 3 tool result(s)");
    await send(session, "write b.txt bee; edit a.txt one ONE", "done: 6 tool result(s)");
    await session.waitFor(/done: 6 tool result\(s\) so far\n(.|\n)*Ctrl-D exits/);
    expect(await read(workspace, "a.txt")).toBe("ONE\n");
    return session;
  }

  it("/undo's picker lists each turn and call with what it changed; Enter undoes the last turn, /redo takes it back", async () => {
    const workspace = await workspaceWith({ "hello.txt": "hello wrld\n" });
    const session = await twoTurns(workspace);

    session.type("/undo");
    session.press("Enter");
    const picker = await session.waitFor("Enter picks · Esc cancels");
    // Newest first: turn 2 with its totals, its calls with each file's lines, then turn 1.
    const rows = picker.slice(picker.indexOf("Undo back to before"));
    expect(rows).toMatch(/turn 2 {2}“write b\.txt bee; edit a\.txt one ONE” {2}2 files changed, \+2 -1/);
    expect(rows).toMatch(/edit_file c\S+ {2}a\.txt \+1 -1/);
    expect(rows).toMatch(/write_file c\S+ {2}b\.txt \(new\) \+1 -0/);
    expect(rows).toMatch(
      /turn 1 {2}“write a\.txt one; edit hello\.txt wrld world” {2}2 files changed, \+2 -1/,
    );
    expect(rows).toMatch(/edit_file c\S+ {2}hello\.txt \+1 -1/);
    expect(rows).toMatch(/write_file c\S+ {2}a\.txt \(new\) \+1 -0/);
    expect(rows.indexOf("turn 2")).toBeLessThan(rows.indexOf("turn 1"));

    // Esc closes it: nothing changes.
    session.press("Escape");
    await session.waitFor("undo cancelled: nothing changed");
    expect(await read(workspace, "a.txt")).toBe("ONE\n");

    session.type("/undo");
    session.press("Enter");
    // The first picker was taken off the screen when it closed: this one is the second.
    await session.waitFor(/undo cancelled: nothing changed(.|\n)*Enter picks · Esc cancels/);
    session.press("Enter");
    await session.waitFor(/restored 2 file\(s\) \(undo it with --to undo:\w+\)\n\s*\/redo takes it back/);
    expect(await read(workspace, "a.txt")).toBe("one\n");
    await expect(read(workspace, "b.txt")).rejects.toThrow(/ENOENT/);
    expect(await read(workspace, "hello.txt")).toBe("hello world\n");

    await send(session, "/redo", /restored 2 file\(s\)(.|\n)*restored 2 file\(s\)/);
    expect(await read(workspace, "a.txt")).toBe("ONE\n");
    expect(await read(workspace, "b.txt")).toBe("bee\n");
    // A redo is the last one: there is nothing more to take back.
    await send(session, "/redo", "nothing to redo");

    session.press("C-d");
    const left = await session.waitFor("[exited 0]");
    const journal = await readJournal(workspace, sessionIdOn(left));
    const started = ofType(journal, "undo.started");
    expect(started).toHaveLength(2);
    // The redo is an undo back to the record just before the first undo started.
    expect(started[1]?.data.target).toEqual({ seq: (started[0]?.seq ?? 0) - 1 });
    expect(ofType(journal, "undo.finished").map((r) => r.data.restored)).toEqual([2, 2]);
  });

  it("/undo N and /undo --to CALL_ID undo as harness undo --turn and --to do", async () => {
    const workspace = await workspaceWith({ "hello.txt": "hello wrld\n" });
    const session = await twoTurns(workspace);
    const journal = await readJournal(workspace, sessionIdOn(session.screen()));
    const editA = ofType(journal, "tool.started").find(
      (r) => r.data.name === "edit_file" && (r.data.arguments as { path?: unknown }).path === "a.txt",
    )?.data.call_id;
    expect(editA).toBeDefined();

    // Only the edit of a.txt (and what came after it: nothing) is undone; b.txt stays.
    await send(session, `/undo --to ${editA}`, /restored 1 file\(s\)/);
    expect(await read(workspace, "a.txt")).toBe("one\n");
    expect(await read(workspace, "b.txt")).toBe("bee\n");

    await send(session, "/undo 1", /restored 3 file\(s\)/);
    await expect(read(workspace, "a.txt")).rejects.toThrow(/ENOENT/);
    await expect(read(workspace, "b.txt")).rejects.toThrow(/ENOENT/);
    expect(await read(workspace, "hello.txt")).toBe("hello wrld\n");

    await send(session, "/undo 7", "/undo: --turn must be from 1 to 2");
    await send(session, "/undo --to nope", '/undo: no call "nope" in this session');
    session.press("C-d");
    await session.waitFor("[exited 0]");
  });

  it("/diff shows the session's net change per file as git diff does; /diff N one turn's", async () => {
    const workspace = await workspaceWith({ "hello.txt": "hello wrld\n" });
    const session = await twoTurns(workspace);
    const all = await send(
      session,
      "/diff",
      /this session \(from its recorded base to now\): 3 files changed, \+3 -1/,
    );
    const shown = all.slice(all.lastIndexOf("› /diff"));
    expect(shown).toContain(
      [
        "diff --git a/a.txt b/a.txt",
        "new file mode 100644",
        "--- /dev/null",
        "+++ b/a.txt",
        "@@ -0,0 +1 @@",
        "+ONE",
      ].join("\n"),
    );
    expect(shown).toContain(
      ["diff --git a/b.txt b/b.txt", "new file mode 100644", "--- /dev/null", "+++ b/b.txt"].join("\n"),
    );
    expect(shown).toContain(
      [
        "diff --git a/hello.txt b/hello.txt",
        "--- a/hello.txt",
        "+++ b/hello.txt",
        "@@ -1 +1 @@",
        "-hello wrld",
        "+hello world",
      ].join("\n"),
    );

    const two = await send(session, "/diff 2", /turn 2: 2 files changed, \+2 -1/);
    const turn2 = two.slice(two.lastIndexOf("› /diff 2"));
    expect(turn2).toContain(["--- a/a.txt", "+++ b/a.txt", "@@ -1 +1 @@", "-one", "+ONE"].join("\n"));
    expect(turn2).toContain("+++ b/b.txt");
    expect(turn2).not.toContain("hello.txt");
    const one = await send(session, "/diff 1", /turn 1: 2 files changed, \+2 -1/);
    const turn1 = one.slice(one.lastIndexOf("› /diff 1"));
    expect(turn1).toContain(["--- /dev/null", "+++ b/a.txt", "@@ -0,0 +1 @@", "+one"].join("\n"));
    expect(turn1).toContain("-hello wrld");
    expect(turn1).not.toContain("b.txt");
    await send(session, "/diff 3", "/diff N takes a turn from 1 to 2");
    session.press("C-d");
    await session.waitFor("[exited 0]");
  });

  it("/sessions lists status and goal and switches: the next turn is journaled in the session switched to", async () => {
    const workspace = await workspaceWith({});
    const session = await chat(workspace);
    const first = await send(session, "write a.txt one", "done: 1 tool result(s)");
    const parent = sessionIdOn(first);
    await session.waitFor(/done: 1 tool(.|\n)*Ctrl-D exits/);
    const forked = await send(session, "/fork", /forked: now in session \S+ /);
    const child = /forked: now in session (\S+) /.exec(forked)?.[1] ?? "";
    const listed = await send(session, "/sessions", "/sessions ID switches");
    const listing = listed.slice(listed.lastIndexOf("› /sessions"));
    expect(listing).toMatch(new RegExp(`\\* ${child} +unverified +write a\\.txt one`));
    expect(listing).toMatch(new RegExp(`  ${parent} +unverified +write a\\.txt one`));
    const parentBefore = await readFile(journalFile(workspace, parent));

    // A prefix that names no session is refused; the chat stays where it is.
    await send(session, "/sessions zzz", '/sessions: no session "zzz"');
    await send(session, `/sessions ${parent.slice(0, -2)}`, `now in session ${parent}`);
    await send(session, "write b.txt bee", "done: 2 tool result(s)");
    session.press("C-d");
    await session.waitFor("[exited 0]");
    expect(await read(workspace, "b.txt")).toBe("bee\n");
    const inParent = ofType(await readJournal(workspace, parent), "user.input").map((r) => r.data.text);
    expect(inParent).toEqual(["write a.txt one", "write b.txt bee"]);
    const inChild = ofType(await readJournal(workspace, child), "user.input").map((r) => r.data.text);
    expect(inChild).toEqual(["write a.txt one"]);
    expect((await readFile(journalFile(workspace, parent))).length).toBeGreaterThan(parentBefore.length);
  });

  it("leaving prints the session and a command that continues it as printed; chat -c continues the latest", async () => {
    const workspace = await workspaceWith({});
    const session = await chat(workspace);
    await send(session, "write a.txt one", "done: 1 tool result(s)");
    session.press("C-d");
    const left = await session.waitFor("[exited 0]");
    const id = /harness chat: session (\S+)/.exec(left)?.[1] ?? "";
    expect(id).toBe(sessionIdOn(left));
    const printed = /continue it with: (harness .*)/.exec(left)?.[1] ?? "";
    expect(printed).toBe(`harness chat --session ${id} --script ${SCRIPT}`);

    // The printed line, run by a shell with harness on its PATH, goes on with the same session.
    const bin = await tempDir("harness-chat-bin-");
    await writeFile(join(bin, "harness"), `#!/bin/sh\nexec '${process.execPath}' '${BIN}' "$@"\n`);
    await chmod(join(bin, "harness"), 0o755);
    const again = terminal.track(
      new TmuxSession(
        workspace,
        [],
        { ...terminal.env(), PATH: `${bin}:${process.env.PATH ?? ""}` },
        printed,
      ),
    );
    again.start();
    expect(sessionIdOn(await again.waitFor("/help for keys and commands"))).toBe(id);
    await send(again, "write b.txt bee", "done: 2 tool result(s)");
    again.press("C-d");
    await again.waitFor("[exited 0]");
    expect(await read(workspace, "b.txt")).toBe("bee\n");

    // chat -c: the workspace's latest session, here the same one.
    const latest = await chat(workspace, "-c");
    expect(sessionIdOn(latest.screen())).toBe(id);
    await send(latest, "write c.txt sea", "done: 3 tool result(s)");
    latest.press("C-d");
    await latest.waitFor("[exited 0]");
    const journal = await readJournal(workspace, id);
    expect(ofType(journal, "user.input").map((r) => r.data.text)).toEqual([
      "write a.txt one",
      "write b.txt bee",
      "write c.txt sea",
    ]);
    expect(ofType(journal, "session.started")).toHaveLength(1);
    expect(count(left, "continue it with:")).toBe(1);
  });
});
