import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixture, ofType, readJournal, tempDir, workspaceWith } from "./helpers.js";
import { CHAT_READY, type TmuxSession, terminalFixture } from "./tmux.js";

/** What the scripted model (fixtures/recording-model.mjs) was sent, one entry per request. */
async function sentToModel(file: string): Promise<{ role: string; content: string }[][]> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { role: string; content: string }[]);
}

/** Approvals on a terminal, driven as a person would (tmux): the question owns the keyboard. */
describe("approvals on a terminal", () => {
  const terminal = terminalFixture("harness-approval-config-");

  async function start(
    workspace: string,
    command: "chat" | "run",
    plan: unknown[],
    ...args: string[]
  ): Promise<{ session: TmuxSession; sent: string }> {
    const sent = join(await tempDir("harness-sent-"), "sent.jsonl");
    const session = terminal.start(
      workspace,
      [command, "--script", fixture("recording-model.mjs"), ...args],
      {
        HARNESS_TEST_SENT: sent,
        HARNESS_TEST_PLAN: JSON.stringify(plan),
      },
    );
    if (command === "chat") await session.waitFor(CHAT_READY);
    return { session, sent };
  }

  const chatIdOn = (screen: string) => /session (\S+) ·/.exec(screen)?.[1] ?? "";
  const runIdOn = (screen: string) => /^session +(\S+)$/m.exec(screen)?.[1] ?? "";
  const shellCall = (id: string, command: string) => ({
    calls: [{ id, name: "shell", arguments: { command } }],
  });

  it("chat: /fork and Enter typed at a question deny nothing and steer nothing; y then answers it", async () => {
    const workspace = await workspaceWith({});
    const { session, sent } = await start(workspace, "chat", [shellCall("s1", "echo ran > out.txt")]);
    session.type("please run it");
    session.press("Enter");
    await session.waitForQuestion();
    session.type("/fork");
    session.press("Enter");
    session.type("steer this");
    session.press("Enter");
    // Nothing answered: the question is still open, nothing was sent or forked.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const waiting = session.screen();
    expect(waiting).not.toMatch(/denied|approved|forked|↳ steer/);
    session.type("y");
    const done = await session.waitFor(/heard 1: please run it/);
    // (the answer follows the question, wrapped at the terminal's width)
    expect(done).toMatch(/approved\s+\(once\)/);
    expect(done).not.toContain("forked");
    session.press("C-d");
    const left = await session.waitFor("[exited 0]");

    const journal = await readJournal(workspace, chatIdOn(left));
    expect(ofType(journal, "approval.decided").map((r) => [r.data.decision, r.data.scope])).toEqual([
      ["allow", "once"],
    ]);
    expect(ofType(journal, "user.steered")).toEqual([]);
    expect(ofType(journal, "user.input").map((r) => r.data.text)).toEqual(["please run it"]);
    expect(await readFile(join(workspace, "out.txt"), "utf8")).toBe("ran\n");
    // The model was sent the goal and the call's result, and nothing typed at the question.
    const requests = await sentToModel(sent);
    expect(requests.length).toBe(2);
    const everything = JSON.stringify(requests);
    expect(everything).not.toContain("fork");
    expect(everything).not.toContain("steer this");
  });

  it("chat: p approves the command's prefix for the session, journaled as the rule shown; a compound line with it still asks", async () => {
    const workspace = await workspaceWith({});
    const { session } = await start(workspace, "chat", [
      shellCall("s1", "echo hi --first"),
      shellCall("s2", "echo hi --second"),
      shellCall("s3", "echo hi; touch pwned"),
      { text: "all done", calls: [] },
    ]);
    session.type("go");
    session.press("Enter");
    const asked = await session.waitForQuestion();
    expect(asked).toContain("s session: shell(echo hi --first)");
    expect(asked).toContain("p session: shell(echo hi*)");
    session.type("p");
    // The second call is covered by the rule and runs unasked; the compound one asks again.
    const second = await session.waitFor(
      /approved\s+\(session: shell\(echo hi\*\)\)[\s\S]*Approval needed[\s\S]*Esc denies/,
    );
    expect(second).toMatch(/command:\s+echo hi; touch pwned/);
    await new Promise((resolve) => setTimeout(resolve, 400));
    session.type("n");
    await session.waitFor("all done");
    session.press("C-d");
    const left = await session.waitFor("[exited 0]");

    const journal = await readJournal(workspace, chatIdOn(left));
    expect(
      ofType(journal, "approval.decided").map((r) => [
        r.data.call_id,
        r.data.decision,
        r.data.scope,
        r.data.pattern,
      ]),
    ).toEqual([
      ["s1", "allow", "session", "echo hi*"],
      ["s3", "deny", "once", undefined],
    ]);
    expect(ofType(journal, "approval.requested").map((r) => r.data.call_id)).toEqual(["s1", "s3"]);
    const results = new Map(ofType(journal, "tool.result").map((r) => [r.data.call_id, r.data.status]));
    expect([results.get("s1"), results.get("s2"), results.get("s3")]).toEqual(["ok", "ok", "denied"]);
    expect(existsSync(join(workspace, "pwned"))).toBe(false);

    // The grant is rebuilt from the journal when the session continues: covered commands run
    // unasked, a compound one still asks (and is denied here).
    const id = chatIdOn(left);
    const { session: next } = await start(
      workspace,
      "run",
      [
        shellCall("s4", "echo hi --resumed"),
        shellCall("s5", "echo hi && touch pwned"),
        { text: "ok", calls: [] },
      ],
      "--session",
      id,
      "continue",
    );
    await next.waitForQuestion();
    next.type("n");
    await next.waitFor("[exited 0]");
    const resumed = await readJournal(workspace, id);
    expect(ofType(resumed, "approval.requested").map((r) => r.data.call_id)).toEqual(["s1", "s3", "s5"]);
    const after = new Map(ofType(resumed, "tool.result").map((r) => [r.data.call_id, r.data.status]));
    expect([after.get("s4"), after.get("s5")]).toEqual(["ok", "denied"]);
    expect(existsSync(join(workspace, "pwned"))).toBe(false);
  });

  it("run: a question is answered with one key (no Enter), other keys are ignored, and the command is shown once", async () => {
    const workspace = await workspaceWith({});
    const { session } = await start(
      workspace,
      "run",
      [shellCall("s1", "echo ran > out.txt")],
      "please run it",
    );
    const asked = await session.waitForQuestion();
    expect(asked).toMatch(/command: echo ran > out\.txt/);
    expect(asked).not.toContain('"command"');
    session.type("/fork");
    session.press("Enter");
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(session.screen()).not.toMatch(/denied|approved/);
    session.type("y");
    const done = await session.waitFor("[exited 0]");
    expect(done).toMatch(/approved\s+\(once\)/);
    const journal = await readJournal(workspace, runIdOn(done));
    expect(ofType(journal, "approval.decided").map((r) => [r.data.decision, r.data.scope])).toEqual([
      ["allow", "once"],
    ]);
    expect(ofType(journal, "user.steered")).toEqual([]);
    expect(await readFile(join(workspace, "out.txt"), "utf8")).toBe("ran\n");
  });
});
