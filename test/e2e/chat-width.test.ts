import { describe, expect, it } from "vitest";
import { displayWidth } from "../../src/shared/text-width.js";
import { jsonScript, workspaceWith } from "./helpers.js";
import { terminalFixture } from "./tmux.js";

/** The chat's own lines measured in columns: a call's arguments are cut to fit, whatever script they are in. */
describe("harness chat in a terminal: wide text", () => {
  const terminal = terminalFixture("harness-chat-width-");

  it("cuts a running call's CJK and emoji arguments to 80 columns on its line, never wrapping them", async () => {
    const command = `sleep 2 # ${"日本語のコメント👍".repeat(15)}`;
    const script = await jsonScript([
      { text: "Waiting.", calls: [{ id: "c1", name: "shell", arguments: { command } }] },
      { text: "Waited.", calls: [] },
    ]);
    const workspace = await workspaceWith({});
    const session = await terminal.chat(workspace, ["chat", "--script", script, "--shell", "allow"]);
    session.type("wait");
    session.press("Enter");
    // The live line of the running call: its name and its arguments, cut to fit.
    const screen = await session.waitFor(/shell sleep 2 # 日本語/);
    const lines = screen.split("\n");
    const call = lines.findIndex((line) => line.includes("shell sleep 2"));
    expect(call, screen).toBeGreaterThanOrEqual(0);
    const line = lines[call]!;
    // The arguments start on the call's line and are cut there, within 80 columns of their own.
    const brief = /sleep 2 # [^…]*…/.exec(line)?.[0];
    expect(brief, line).toBeDefined();
    const shown = brief ?? "";
    expect(displayWidth(shown)).toBeLessThanOrEqual(80);
    expect(displayWidth(shown)).toBeGreaterThanOrEqual(79);
    // Nothing of it spilled onto the next line.
    expect(lines[call + 1] ?? "").not.toContain("日本語");
    await session.waitFor("│ Waited.");
    session.press("C-d");
    await session.waitFor("[exited 0]");
  }, 60_000);
});
