import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BIN,
  childEnv,
  ensureBuilt,
  finished,
  fixture,
  harness,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { CHAT_READY, type TmuxSession, terminalFixture } from "./tmux.js";

/**
 * `!command` in the chat, in a real pseudo-terminal: what the screen shows, what the recording
 * model was sent, the journal, and the files on disk judge it.
 */
describe("harness chat: !command", () => {
  const terminal = terminalFixture("harness-bang-config-");

  async function chat(
    workspace: string,
    flags: string[] = [],
    env: Record<string, string> = {},
  ): Promise<{ session: TmuxSession; sent: string; id: string }> {
    const sent = join(await tempDir("harness-sent-"), "sent.jsonl");
    const session = terminal.start(
      workspace,
      ["chat", "--script", fixture("recording-model.mjs"), "--shell", "ask", ...flags],
      { HARNESS_TEST_SENT: sent, ...env },
    );
    const screen = await session.waitFor(CHAT_READY);
    // !commands run in the session: the first message starts it.
    session.type("first");
    session.press("Enter");
    await session.waitFor("heard 1: first");
    await session.waitFor("Ctrl-D exits");
    return { session, sent, id: /session (\S+) ·/.exec(screen)?.[1] ?? "" };
  }

  const requests = async (sent: string) =>
    (await readFile(sent, "utf8"))
      .trim()
      .split("\n")
      .map((line) => JSON.stringify(JSON.parse(line)));

  it("shows the output without sending it; !! sends it with the next message; both journaled", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const { session, sent, id } = await chat(workspace);
    session.type("!echo private-$((6*7))");
    session.press("Enter");
    await session.waitFor("private-42");
    await session.waitFor("not sent to the model");
    // Shown once: under the call's own lines, not again after them (the command line itself reads `$((6*7))`).
    expect(session.screen().match(/private-42/g)).toHaveLength(1);
    session.type("second");
    session.press("Enter");
    await session.waitFor("heard 2:");
    expect((await requests(sent)).at(-1)).not.toContain("private-42");
    session.type("!!echo shared-$((6*7))");
    session.press("Enter");
    await session.waitFor("shared-42");
    await session.waitFor("go to the model with your next message");
    session.type("third");
    session.press("Enter");
    await session.waitFor("heard 3:");
    const last = (await requests(sent)).at(-1) ?? "";
    expect(last).toContain("shared-42");
    expect(last).toContain("echo shared-$((6*7))");
    expect(last).not.toContain("private-42");
    session.press("C-d");
    await session.waitFor("[exited 0]");
    const journal = await readJournal(workspace, id);
    expect(ofType(journal, "user.command").map((r) => r.data)).toEqual([
      { call_id: "user:1", command: "echo private-$((6*7))", share: false },
      { call_id: "user:2", command: "echo shared-$((6*7))", share: true },
    ]);
    const results = ofType(journal, "tool.result").filter((r) => String(r.data.call_id).startsWith("user:"));
    expect(results.map((r) => [r.data.call_id, r.data.status])).toEqual([
      ["user:1", "ok"],
      ["user:2", "ok"],
    ]);
    expect(String(results[0]?.data.content)).toContain("private-42");
    // Typing it answered the shell's `ask`: recorded as the user's approval.
    expect(
      ofType(journal, "approval.decided")
        .filter((r) => r.data.call_id === "user:1")
        .map((r) => r.data.by),
    ).toEqual(["user"]);
    const inputs = ofType(journal, "user.input").map((r) => String(r.data.text));
    expect(inputs.at(-1)).toContain("shared-42");
  });

  it("a file it creates is journaled as its change (audit: nothing outside) and harness undo takes it back", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const { session, id } = await chat(workspace);
    session.type("!touch made-by-user.txt");
    session.press("Enter");
    await session.waitFor("not sent to the model");
    await readFile(join(workspace, "made-by-user.txt"));
    session.press("C-d");
    await session.waitFor("[exited 0]");
    const audit = await harness(["audit", id], { cwd: workspace });
    expect(audit.stdout).toContain("the workspace matches the record: nothing changed outside it");
    const undo = await harness(["undo", id], { cwd: workspace });
    expect(undo.stdout).toMatch(/deleted\s+made-by-user\.txt/);
    await expect(readFile(join(workspace, "made-by-user.txt"))).rejects.toThrow(/ENOENT/);
    const changes = ofType(await readJournal(workspace, id), "workspace.changed").map((r) => r.data);
    expect(changes.filter((c) => c.source === "outside")).toEqual([]);
    expect(changes.find((c) => c.call_id === "user:1")).toMatchObject({
      source: "shell",
      created: [expect.objectContaining({ path: "made-by-user.txt" })],
    });
  });

  it("while a turn runs it is not run: the person is told to wait", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const { session, id } = await chat(workspace, [], {
      HARNESS_TEST_PLAN: JSON.stringify([
        { text: "heard 1: first", calls: [] },
        { calls: [{ id: "s1", name: "shell", arguments: { command: "sleep 3; echo slept" } }] },
        { text: "done sleeping", calls: [] },
      ]),
    });
    session.type("sleep please");
    session.press("Enter");
    await session.waitForQuestion();
    session.type("y");
    session.type("!touch during-turn.txt");
    session.press("Enter");
    await session.waitFor("a !command runs between turns");
    await session.waitFor("done sleeping");
    await expect(readFile(join(workspace, "during-turn.txt"))).rejects.toThrow(/ENOENT/);
    session.press("C-d");
    await session.waitFor("[exited 0]");
    expect(ofType(await readJournal(workspace, id), "user.command")).toEqual([]);
  });

  it("a deny rule refuses it (nothing deleted); escapes are escaped; secrets and hidden files stay out", async () => {
    const workspace = await workspaceWith({ "x/keep.txt": "keep\n" });
    const { session, id } = await chat(workspace, ["--deny", "shell(rm*)"], {
      BANG_TEST_API_KEY: "sk-bangsecret0123456789",
    });
    session.type("!rm -rf x");
    session.press("Enter");
    await session.waitFor(/shell\(rm\*\)/);
    expect(await readFile(join(workspace, "x/keep.txt"), "utf8")).toBe("keep\n");
    session.type("!printf 'A\\033[2JB\\n'; echo \"key=$BANG_TEST_API_KEY\"");
    session.press("Enter");
    const screen = await session.waitFor(/key=/);
    expect(screen).not.toContain("sk-bangsecret0123456789");
    // The clear-screen sequence is shown, not obeyed: the earlier lines are still there.
    expect(screen).toContain("heard 1: first");
    expect(screen).toMatch(/A.*\[2JB/);
    // What the sandbox hides from the model's shell is hidden from the person's command too.
    session.type('!cat ~/.config/harness/journal.key; echo "rc=$?"');
    session.press("Enter");
    // Its error and its exit status come on different streams: wait until both are drawn.
    const hidden = await session.waitFor(
      /No such file or directory[\s\S]*rc=\d|rc=\d[\s\S]*No such file or directory/,
    );
    expect(hidden).toMatch(/journal\.key: No such file or directory/);
    expect(hidden).toMatch(/rc=1/);
    session.press("C-d");
    await session.waitFor("[exited 0]");
    const journal = await readJournal(workspace, id);
    const denied = ofType(journal, "tool.result").find((r) => r.data.call_id === "user:1");
    expect(denied?.data.status).toBe("denied");
    expect(ofType(journal, "tool.started").map((r) => r.data.call_id)).not.toContain("user:1");
    expect(JSON.stringify(journal)).not.toContain("sk-bangsecret0123456789");
  });
});

describe("harness chat in line mode: !command", () => {
  let config: string;
  beforeAll(async () => {
    ensureBuilt();
    config = join(await tempDir("harness-bang-lines-config-"), "config.json");
    await writeFile(config, "{}");
  });
  afterAll(removeTempDirs);

  it("runs a !command read from a line, shows its output escaped, and keeps it from the model", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const sent = join(await tempDir("harness-sent-"), "sent.jsonl");
    const child = spawn(
      process.execPath,
      [BIN, "chat", "--script", fixture("recording-model.mjs"), "--shell", "allow"],
      {
        cwd: workspace,
        env: { ...childEnv(), HARNESS_CONFIG: config, HARNESS_TEST_SENT: sent },
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    child.stdin.end("first\n!printf 'line-\\033]0;pwned\\007-%d\\n' $((6*7))\nsecond\n");
    const result = await finished(child);
    expect(result.code).toBe(0);
    expect(result.stdout).not.toContain("\u001b");
    expect(result.stdout).toContain("line-\\x1b]0;pwned\\x07-42");
    expect(result.stdout).toContain("not sent to the model");
    expect(result.stdout).toContain("heard 2:");
    expect(await readFile(sent, "utf8")).not.toContain("-42");
  });
});
