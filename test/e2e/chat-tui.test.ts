import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { alive, eventually } from "../support/processes.js";
import { fixture, journalFile, jsonScript, ofType, readJournal, workspaceWith } from "./helpers.js";
import { type TmuxSession, terminalFixture } from "./tmux.js";

/** The chat driven as a person would, in a real pseudo-terminal (tmux), judged by the screen and the journal. */
describe("harness chat in a terminal", () => {
  const terminal = terminalFixture("harness-chat-config-");

  async function chat(
    workspace: string,
    replies: unknown[] | string,
    ...flags: string[]
  ): Promise<TmuxSession> {
    const script = typeof replies === "string" ? replies : await jsonScript(replies);
    return terminal.chat(workspace, ["chat", "--script", script, ...flags]);
  }

  const sessionIdOn = (screen: string) => /session (\S+) ·/.exec(screen)?.[1] ?? "";

  const EDIT = [
    {
      text: "Let me look at it.",
      calls: [{ id: "c1", name: "read_file", arguments: { path: "hello.txt" } }],
    },
    {
      calls: [
        {
          id: "c2",
          name: "edit_file",
          arguments: { path: "hello.txt", old_text: "wrld", new_text: "world" },
        },
      ],
    },
    { text: "Fixed the typo.", calls: [] },
  ];

  it("streams the reply, shows the edit's diff inline, applies it on y, and records the approval", async () => {
    const workspace = await workspaceWith({ "hello.txt": "hello wrld\n" });
    const session = await chat(workspace, EDIT);
    session.type("fix the typo");
    session.press("Enter");
    const asked = await session.waitForQuestion();
    expect(asked).toContain("│ Let me look at it.");
    expect(asked).toContain("✓ read_file ok");
    expect(asked).toMatch(/-hello wrld\n\s*\+hello world/);
    expect(asked).toContain("Approval needed: edit_file");
    session.type("y");
    const done = await session.waitFor("— unverified");
    expect(done).toContain("approved (once)");
    expect(done).toContain("│ Fixed the typo.");
    expect(await readFile(join(workspace, "hello.txt"), "utf8")).toBe("hello world\n");

    session.type("/diff");
    session.press("Enter");
    await session.waitFor(
      /-hello wrld\n\+hello world\nthis session \(from its recorded base to now\): 1 file changed, \+1 -1/,
    );
    session.press("C-d");
    const left = await session.waitFor("[exited 0]");

    const journal = await readJournal(workspace, sessionIdOn(left));
    expect(ofType(journal, "user.input")[0]?.data.text).toBe("fix the typo");
    expect(
      ofType(journal, "approval.decided").map((r) => [r.data.call_id, r.data.decision, r.data.scope]),
    ).toEqual([["c2", "allow", "once"]]);
    expect(ofType(journal, "tool.result").map((r) => [r.data.call_id, r.data.status])).toEqual([
      ["c1", "ok"],
      ["c2", "ok"],
    ]);
  });

  it("bare harness on a terminal is harness chat", async () => {
    const workspace = await workspaceWith({});
    const session = terminal.start(workspace, []);
    // No model is configured here: the chat itself says so (a pipe would get the help instead).
    const screen = await session.waitFor("[exited 64]");
    expect(screen).toContain("harness chat: no model configured");
  });

  it("Enter alone does not answer; n denies: the file stays as it was and the journal says denied", async () => {
    const workspace = await workspaceWith({ "hello.txt": "hello wrld\n" });
    const session = await chat(workspace, EDIT);
    session.type("fix the typo");
    session.press("Enter");
    await session.waitForQuestion();
    session.press("Enter");
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(session.screen()).not.toContain("⊘ edit_file denied");
    session.type("n");
    const done = await session.waitFor("— unverified");
    expect(done).toContain("denied");
    expect(done).toContain("⊘ edit_file denied");
    expect(await readFile(join(workspace, "hello.txt"), "utf8")).toBe("hello wrld\n");
    session.press("C-c");
    session.press("C-c");
    const left = await session.waitFor("[exited 0]");
    const journal = await readJournal(workspace, sessionIdOn(left));
    expect(ofType(journal, "approval.decided").map((r) => r.data.decision)).toEqual(["deny"]);
    expect(ofType(journal, "tool.result").find((r) => r.data.call_id === "c2")?.data.status).toBe("denied");
  });

  it("shows a shell call's exact command, cwd and sandbox before it runs", async () => {
    const workspace = await workspaceWith({});
    const session = await chat(workspace, [
      { calls: [{ id: "s1", name: "shell", arguments: { command: "echo hi > out.txt" } }] },
      { text: "done", calls: [] },
    ]);
    session.type("write out.txt");
    session.press("Enter");
    const asked = await session.waitForQuestion();
    expect(asked).toContain("Approval needed: shell");
    expect(asked).toMatch(/command:\s+echo hi > out\.txt/);
    expect(asked).toMatch(/cwd:\s+\S+/);
    expect(asked).toMatch(/sandbox:\s+\S+/);
    session.type("n");
    await session.waitFor("— unverified");
  });

  it("a follow-up message is the session's next turn: the model is sent the first turn and the new input", async () => {
    const workspace = await workspaceWith({});
    const session = await chat(workspace, fixture("chat-echo.mjs"));
    session.type("first question");
    session.press("Enter");
    await session.waitFor(/heard 1: .*first question/);
    session.type("second question");
    session.press("Enter");
    const screen = await session.waitFor(/heard 2: .*first question \| .*second question/);
    expect(screen.match(/— unverified/g)).toHaveLength(2);
    session.press("C-d");
    const left = await session.waitFor("[exited 0]");
    const journal = await readJournal(workspace, sessionIdOn(left));
    expect(ofType(journal, "user.input").map((r) => r.data.text)).toEqual([
      "first question",
      "second question",
    ]);
    expect(ofType(journal, "session.started")).toHaveLength(1);
  });

  it("/fork continues in a new session that starts by naming its parent; the parent's journal is untouched", async () => {
    const workspace = await workspaceWith({});
    const session = await chat(workspace, fixture("chat-echo.mjs"));
    session.type("first question");
    session.press("Enter");
    const first = await session.waitFor(/heard 1: .*first question/);
    const parent = sessionIdOn(first);
    await session.waitFor("Ctrl-D exits");
    const parentBytes = await readFile(journalFile(workspace, parent));
    session.type("/fork");
    session.press("Enter");
    const forked = await session.waitFor(/forked: now in session \S+ \(from /);
    const child = /forked: now in session (\S+) /.exec(forked)?.[1] ?? "";
    session.type("second question");
    session.press("Enter");
    await session.waitFor(/heard 2: .*first question \| .*second question/);
    session.press("C-d");
    await session.waitFor("[exited 0]");
    expect(await readFile(journalFile(workspace, parent))).toEqual(parentBytes);
    const journal = await readJournal(workspace, child);
    expect(journal[0]?.type).toBe("session.forked");
    expect(journal[0]?.data.parent).toBe(parent);
    expect(ofType(journal, "user.input").map((r) => r.data.text)).toEqual([
      "first question",
      "second question",
    ]);
  });

  it("typing while a turn runs steers it: journaled at once, delivered after the running call", async () => {
    const workspace = await workspaceWith({});
    const session = await chat(workspace, fixture("chat-echo.mjs"), "--shell", "allow");
    session.type("run slow please");
    session.press("Enter");
    await session.waitFor(/shell sleep 3 .*\d+\.\ds/);
    session.type("also mention bananas");
    session.press("Enter");
    await session.waitFor("↳ steer: also mention bananas");
    const screen = await session.waitFor(/heard \d+: .*also mention bananas/);
    // The steer waited for the call: its result is shown before the reply that heard it.
    expect(screen.indexOf("✓ shell ok")).toBeLessThan(screen.search(/heard \d+: .*bananas/));
    session.press("C-d");
    const left = await session.waitFor("[exited 0]");
    const journal = await readJournal(workspace, sessionIdOn(left));
    const steered = ofType(journal, "user.steered");
    expect(steered.map((r) => r.data.text)).toEqual(["also mention bananas"]);
    const result = ofType(journal, "tool.result")[0];
    const delivered = ofType(journal, "steer.delivered")[0];
    expect(result?.seq).toBeLessThan(delivered?.seq ?? 0);
  });

  it("Esc interrupts a running shell command: its process tree is killed and the outcome recorded", async () => {
    const workspace = await workspaceWith({});
    const session = await chat(
      workspace,
      [
        {
          calls: [
            {
              id: "s1",
              name: "shell",
              arguments: { command: "sleep 60 & echo $! > bg.pid; wait", timeout_ms: 120000 },
            },
          ],
        },
        { text: "should not be asked", calls: [] },
      ],
      "--shell",
      "allow",
      // Without a PID namespace, the pid the command writes is the host's, so the test can look for it.
      "--sandbox",
      "off",
    );
    session.type("run the slow thing");
    session.press("Enter");
    await session.waitFor(/shell sleep 60 .*\d+\.\ds/);
    const pidFile = join(workspace, "bg.pid");
    const deadline = Date.now() + 10_000;
    let pid = Number.NaN;
    while (Number.isNaN(pid) && Date.now() < deadline) {
      pid = Number.parseInt(await readFile(pidFile, "utf8").catch(() => ""), 10);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(alive(pid)).toBe(true);
    session.press("Escape");
    const done = await session.waitFor("— interrupted");
    expect(done).toContain("interrupting");
    expect(done).not.toContain("should not be asked");
    // SIGKILL was sent to the whole tree; allow the kernel a moment to deliver it.
    expect(await eventually(() => !alive(pid), 2_000)).toBe(true);
    session.press("C-d");
    const left = await session.waitFor("[exited 0]");
    const journal = await readJournal(workspace, sessionIdOn(left));
    const result = ofType(journal, "tool.result").find((r) => r.data.call_id === "s1");
    expect(["cancelled", "unknown"]).toContain(result?.data.status);
  });
});
