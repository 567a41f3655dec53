import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loopback } from "./chat-loopback.js";
import {
  BIN,
  childEnv,
  finished,
  jsonScript,
  ofType,
  readJournal,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { TmuxSession, terminalFixture } from "./tmux.js";

/** What the chat shows while a turn runs, in a real pseudo-terminal (tmux). */
describe("harness chat: live views", () => {
  const terminal = terminalFixture("harness-chat-live-config-");

  async function chat(workspace: string, replies: unknown[], ...flags: string[]): Promise<TmuxSession> {
    return terminal.chat(workspace, ["chat", "--script", await jsonScript(replies), ...flags]);
  }

  it("/model lists the profiles, switches for the next turn, and the switch is journaled and kept on resume", async () => {
    const server = await loopback();
    try {
      const profiles = join(await tempDir("harness-chat-models-"), "config.json");
      const profile = (model: string) => ({
        provider: "openai-compatible",
        model,
        base_url: server.baseUrl,
        api_key_env: "LOCAL_KEY",
      });
      await writeFile(
        profiles,
        JSON.stringify({
          models: { small: profile("alpha-1b"), big: profile("zeta-7b") },
          default_profile: "small",
        }),
      );
      const workspace = await workspaceWith({});
      const env = {
        HARNESS_CONFIG: profiles,
        HARNESS_KEY_FILE: process.env.HARNESS_KEY_FILE ?? "",
        LOCAL_KEY: "k",
      };
      const session = new TmuxSession(workspace, ["chat"], { ...env, TERM: "xterm-256color" });
      terminal.track(session);
      session.start();
      await session.waitFor("/help for keys and commands");
      session.type("hello");
      session.press("Enter");
      await session.waitFor("│ alpha-1b says hi");

      session.type("/model");
      session.press("Enter");
      const listed = await session.waitFor("/model NAME switches from the next turn");
      expect(listed).toContain("model: alpha-1b (profile small)");
      expect(listed).toMatch(/\* small\s+openai-compatible\s+alpha-1b/);
      expect(listed).toMatch(/ {2}big\s+openai-compatible\s+zeta-7b/);
      expect(listed).toContain("offered to profile small: alpha-1b, zeta-7b");

      session.type("/model big");
      session.press("Enter");
      await session.waitFor("model: zeta-7b (profile big)");
      session.type("/model no such thing");
      session.press("Enter");
      await session.waitFor("/model takes one name");
      session.type("again");
      session.press("Enter");
      await session.waitFor("│ zeta-7b says hi");
      expect(server.models).toEqual(["alpha-1b", "zeta-7b"]);
      session.press("C-d");
      const left = await session.waitFor("[exited 0]");
      const id = /session (\S+) ·/.exec(left)?.[1] ?? "";

      const journal = await readJournal(workspace, id);
      const switched = ofType(journal, "model.switched");
      expect(switched).toHaveLength(1);
      expect(switched[0]?.data.from).toMatchObject({ model: "alpha-1b" });
      expect(switched[0]?.data.to).toMatchObject({ model: "zeta-7b" });
      expect(switched[0]?.data.options).toMatchObject({ profile: "big" });
      // Before the second turn's input: that turn was the new model's from its start.
      const types = journal.map((r) => r.type);
      expect(types.indexOf("model.switched")).toBeLessThan(types.lastIndexOf("user.input"));

      // A resume without model flags continues with the switched model, as recorded.
      const resumed = await finished(
        spawn(process.execPath, [BIN, "run", "--session", id, "--json", "third"], {
          cwd: workspace,
          env: { ...childEnv(), ...env },
          stdio: ["ignore", "pipe", "pipe"],
        }),
      );
      expect(resumed.code).toBe(0);
      expect(JSON.parse(resumed.stdout).answer).toBe("zeta-7b says hi");
      expect(server.models.at(-1)).toBe("zeta-7b");
      // Asking for the old model again is still an identity mismatch: the check was not weakened.
      const refused = await finished(
        spawn(process.execPath, [BIN, "run", "--session", id, "--profile", "small", "fourth"], {
          cwd: workspace,
          env: { ...childEnv(), ...env },
          stdio: ["ignore", "pipe", "pipe"],
        }),
      );
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain("different model provider");
    } finally {
      await server.close();
    }
  });

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
    // The live lines go with the live line; the scrollback keeps the result and, under it, the
    // command's output as recorded (all of it here: it is shorter than the head and tail shown).
    expect(done.match(/│ step-4/g)).toHaveLength(1);
    expect(done).toMatch(/✓ shell ok[^\n]*\n(.*\n)*.*│ step-1\n(.*\n)*.*│ finished/);
  });
});
