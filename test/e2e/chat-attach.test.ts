import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixture, ofType, readJournal, tempDir, workspaceWith } from "./helpers.js";
import { type TmuxSession, terminalFixture } from "./tmux.js";

/** `@path` in the chat: a workspace file's content goes with the message; completion over the workspace. */
describe("harness chat: @file attachments", () => {
  const terminal = terminalFixture("harness-attach-config-");

  async function chat(workspace: string): Promise<{ session: TmuxSession; sent: string }> {
    const sent = join(await tempDir("harness-sent-"), "sent.jsonl");
    const session = await terminal.chat(workspace, ["chat", "--script", fixture("recording-model.mjs")], {
      HARNESS_TEST_SENT: sent,
    });
    return { session, sent };
  }

  const sessionIdOn = (screen: string) => /session (\S+) ·/.exec(screen)?.[1] ?? "";

  it("Tab completes a workspace file (never a gitignored one) and the file's content reaches the model, recorded", async () => {
    const workspace = await workspaceWith({
      ".gitignore": "build/\n",
      "notes.md": "the secret word is pineapple\n",
      "build/notes-generated.md": "ignored output\n",
    });
    const { session, sent } = await chat(workspace);
    session.type("@note");
    session.press("Tab");
    const completed = await session.waitFor("@notes.md");
    expect(completed).not.toContain("build/notes-generated.md");
    session.type("what is the word?");
    session.press("Enter");
    const screen = await session.waitFor(/heard 1: /);
    expect(screen).toMatch(/\+ attached notes\.md \(29 bytes\)/);
    session.press("C-d");
    const left = await session.waitFor("[exited 0]");

    const requests = (await readFile(sent, "utf8"))
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as { role: string; content: string }[]);
    const user = requests[0]?.find((message) => message.role === "user")?.content ?? "";
    expect(user).toContain("@notes.md what is the word?");
    expect(user).toContain(
      '<attached file="notes.md" bytes="29">\nthe secret word is pineapple\n\n</attached>',
    );
    const journal = await readJournal(workspace, sessionIdOn(left));
    expect(ofType(journal, "user.input")[0]?.data.text).toBe(user);
  });

  it("refuses a path outside the workspace, in .harness, or one the policy keeps secret; nothing is sent", async () => {
    const outside = await tempDir("harness-outside-");
    const workspace = await workspaceWith({ ".env": "API_KEY=hunter2\n", "ok.txt": "fine\n" });
    const { session, sent } = await chat(workspace);
    for (const [mention, why] of [
      ["@../outside.txt", "outside the workspace"],
      [`@${join(outside, "x.txt")}`, "outside the workspace"],
      ["@.harness/anything", "protected"],
      ["@.env", "the policy does not let read_file read it"],
    ] as const) {
      session.type(`${mention} read this`);
      session.press("Enter");
      await session.waitFor(`✗ not sent: ${mention}: ${why}`);
    }
    session.press("C-d");
    await session.waitFor("[exited 0]");
    // The model was never asked anything.
    expect(await readFile(sent, "utf8").catch(() => "")).toBe("");
  });
});
