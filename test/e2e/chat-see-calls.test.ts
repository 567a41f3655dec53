import { describe, expect, it } from "vitest";
import { jsonScript, workspaceWith } from "./helpers.js";
import { type TmuxSession, terminalFixture } from "./tmux.js";

/** What the chat shows of a finished call, in a real pseudo-terminal (tmux), judged by the screen. */
describe("harness chat shows what each call did", () => {
  const terminal = terminalFixture("harness-chat-see-");

  const REPLIES = [
    { calls: [{ id: "c1", name: "read_file", arguments: { path: "hello.txt" } }] },
    {
      calls: [
        {
          id: "c2",
          name: "edit_file",
          arguments: { path: "hello.txt", old_text: "wrld", new_text: "world" },
        },
      ],
    },
    { calls: [{ id: "c3", name: "shell", arguments: { command: "seq 101 160" } }] },
    { text: "All done.", calls: [] },
  ];

  async function chat(workspace: string, ...flags: string[]): Promise<TmuxSession> {
    const script = await jsonScript(REPLIES);
    const session = await terminal.chat(workspace, [
      "chat",
      "--script",
      script,
      "--write",
      "allow",
      "--shell",
      "allow",
      ...flags,
    ]);
    session.type("fix the typo and count");
    session.press("Enter");
    return session;
  }

  it("the edit's diff and the command's first and last lines appear under their calls", async () => {
    const workspace = await workspaceWith({ "hello.txt": "hello wrld\n" });
    const session = await chat(workspace);
    const screen = await session.waitFor("— unverified");
    expect(screen).toMatch(
      /✓ edit_file ok[^\n]*\n\s*│ --- a\/hello\.txt\n\s*│ \+\+\+ b\/hello\.txt\n\s*│ @@ -1 \+1 @@\n\s*│ -hello wrld\n\s*│ \+hello world/,
    );
    expect(screen).toMatch(/✓ shell ok[^\n]*\n\s*stdout:\n\s*│ 101\n/);
    expect(screen).toContain("│ 108\n");
    expect(screen).toMatch(/│ … 44 lines not shown \(all of them: harness inspect \S+ --call c3/);
    expect(screen).toContain("│ 153\n");
    expect(screen).toContain("│ 160\n");
    expect(screen).not.toContain("│ 130\n");
    session.press("C-d");
    await session.waitFor("[exited 0]");
  });

  it("--quiet-calls shows the calls' status lines only", async () => {
    const workspace = await workspaceWith({ "hello.txt": "hello wrld\n" });
    const session = await chat(workspace, "--quiet-calls");
    const screen = await session.waitFor("— unverified");
    expect(screen).toContain("✓ edit_file ok");
    expect(screen).toContain("✓ shell ok");
    expect(screen).not.toContain("│ +hello world");
    expect(screen).not.toContain("│ 101");
    session.press("C-d");
    await session.waitFor("[exited 0]");
  });
});
