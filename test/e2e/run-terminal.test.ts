import { describe, expect, it } from "vitest";
import { childEnv, fixture, ofType, pasteAsPrinted, readJournal, tempDir, workspaceWith } from "./helpers.js";
import { TmuxSession, terminalFixture } from "./tmux.js";

/** harness run on a real terminal (tmux): typed lines steer the turn, Ctrl-C interrupts it. */
describe("harness run on a terminal", () => {
  const terminal = terminalFixture("harness-run-tty-config-");

  function run(workspace: string, ...args: string[]): TmuxSession {
    return terminal.start(workspace, [
      "run",
      "--script",
      fixture("chat-echo.mjs"),
      "--shell",
      "allow",
      ...args,
    ]);
  }

  const sessionIdOn = (screen: string) => /^session +(\S+)$/m.exec(screen)?.[1] ?? "";

  it("a line typed while the run works is journaled as steering and reaches the model at the next step", async () => {
    const workspace = await workspaceWith({});
    const session = run(workspace, "run slow please");
    await session.waitFor("│ Starting the slow command.");
    session.type("also mention bananas");
    session.press("Enter");
    await session.waitFor("steering recorded");
    const screen = await session.waitFor("[exited 0]");
    expect(screen).toMatch(/heard \d+: .*also mention bananas/);
    const journal = await readJournal(workspace, sessionIdOn(screen));
    expect(ofType(journal, "user.steered").map((r) => r.data.text)).toEqual(["also mention bananas"]);
    // Delivered after the running call's result, never in the middle of it.
    const result = ofType(journal, "tool.result")[0];
    const delivered = ofType(journal, "steer.delivered")[0];
    expect(result?.seq).toBeLessThan(delivered?.seq ?? 0);
  });

  it("Ctrl-C interrupts the turn (exit 130) and leaves the session open for run --continue", async () => {
    const workspace = await workspaceWith({});
    const session = run(workspace, "run slow please");
    await session.waitFor("│ Starting the slow command.");
    session.press("C-c");
    const screen = await session.waitFor("[exited 130]");
    expect(screen).toContain("interrupting the turn");
    const id = sessionIdOn(screen);
    const journal = await readJournal(workspace, id);
    expect(ofType(journal, "turn.interrupted")).toHaveLength(1);
    expect(ofType(journal, "run.cancelled")).toHaveLength(0);

    const next = run(workspace, "--continue", "and now?");
    const after = await next.waitFor("[exited 0]");
    expect(after).toMatch(/heard \d+: .*and now\?/);
    expect(sessionIdOn(after)).toBe(id);
  });

  it("after an interrupt, the printed next command continues this session as pasted from another directory", async () => {
    const workspace = await workspaceWith({});
    const elsewhere = await tempDir("harness-cwd-");
    const env = {
      HARNESS_CONFIG: terminal.config,
      HARNESS_KEY_FILE: process.env.HARNESS_KEY_FILE ?? "",
      TERM: "xterm-256color",
    };
    const session = terminal.track(
      new TmuxSession(
        elsewhere,
        [
          "run",
          "--workspace",
          workspace,
          "--script",
          fixture("chat-echo.mjs"),
          "--shell",
          "allow",
          "--max-tool-calls",
          "7",
          "run slow please",
        ],
        env,
      ),
    );
    session.start();
    await session.waitFor("│ Starting the slow command.");
    session.press("C-c");
    const screen = await session.waitFor("[exited 130]");
    const id = sessionIdOn(screen);
    const next = /^next +(harness .*)$/m.exec(screen)?.[1] ?? "";
    // The script and the budget are not in the journal: the command gives them again; the
    // policy (--shell allow) is the session's own.
    expect(next).toBe(
      `harness run --session ${id} --script ${fixture("chat-echo.mjs")} --max-tool-calls 7 PROMPT --workspace ${workspace}`,
    );
    // The interrupt line names the same command.
    expect(screen).toContain(`(next: ${next}); Ctrl-C again exits now`);

    const pasted = await pasteAsPrinted(
      next.replace(/ PROMPT /, " 'and now?' "),
      await tempDir("harness-cwd-"),
      {
        ...childEnv(),
        ...env,
      },
    );
    expect(pasted.code).toBe(0);
    expect(pasted.stdout).toMatch(/heard \d+: .*and now\?/);
    const journal = await readJournal(workspace, id);
    expect(ofType(journal, "user.input").map((r) => [r.data.turn, r.data.text])).toEqual([
      [1, "run slow please"],
      [2, "and now?"],
    ]);

    // With --json the summary's `next` field holds the same command.
    const json = terminal.track(
      new TmuxSession(
        elsewhere,
        [
          "run",
          "--workspace",
          workspace,
          "--session",
          id,
          "--script",
          fixture("chat-echo.mjs"),
          "--json",
          "run slow please",
        ],
        env,
      ),
    );
    json.start();
    await json.waitFor("│ Starting the slow command.");
    json.press("C-c");
    const summary = JSON.parse(/^\{.*\}$/m.exec(await json.waitFor("[exited 130]"))?.[0] ?? "{}");
    expect(summary.status).toBe("interrupted");
    expect(summary.next).toEqual([
      `harness run --session ${id} --script ${fixture("chat-echo.mjs")} PROMPT --workspace ${workspace}`,
    ]);
  });
});
