import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, jsonScript, removeTempDirs, tempDir, workspaceWith } from "./helpers.js";
import { TmuxSession } from "./tmux.js";

/** What the chat shows while a turn runs, in a real pseudo-terminal (tmux). */
describe("harness chat: live views", () => {
  let config: string;
  const sessions: TmuxSession[] = [];

  beforeAll(async () => {
    ensureBuilt();
    config = join(await tempDir("harness-chat-live-config-"), "config.json");
    await writeFile(config, "{}");
  });
  afterEach(() => {
    for (const session of sessions.splice(0)) session.kill();
  });
  afterAll(removeTempDirs);

  async function chat(workspace: string, replies: unknown[], ...flags: string[]): Promise<TmuxSession> {
    const session = new TmuxSession(workspace, ["chat", "--script", await jsonScript(replies), ...flags], {
      HARNESS_CONFIG: config,
      HARNESS_KEY_FILE: process.env.HARNESS_KEY_FILE ?? "",
      TERM: "xterm-256color",
    });
    sessions.push(session);
    session.start();
    await session.waitFor("/help for keys and commands");
    return session;
  }

  it("a running shell call shows its last output lines under its live line, escaped", async () => {
    const workspace = await workspaceWith({});
    const command =
      "for i in 1 2 3 4 5; do echo step-$i; done; printf 'bell\\007 \\033[31mred\\n'; sleep 4; echo finished";
    const session = await chat(
      workspace,
      [{ calls: [{ id: "s1", name: "shell", arguments: { command } }] }, { text: "Done.", calls: [] }],
      "--shell",
      "allow",
    );
    session.type("build it");
    session.press("Enter");
    // While the command sleeps: its live line (spinner, elapsed) and the last three lines under it.
    const running = await session.waitFor(/shell for i in .*\d+\.\ds\n.*│ step-4\n.*│ step-5\n.*│ bell/);
    expect(running).not.toContain("step-3");
    expect(running).not.toContain("finished");
    expect(running).not.toContain("✓ shell ok");
    // Control characters arrive escaped, never raw.
    expect(running).toMatch(/│ bell\\(x07|a|u0007).*\\(x1b|e|u001b)\[31mred/);
    const done = await session.waitFor("— unverified");
    expect(done).toContain("✓ shell ok");
    // The live lines go with the live line: the scrollback keeps only the result.
    expect(done).not.toContain("│ step-4");
  });
});
