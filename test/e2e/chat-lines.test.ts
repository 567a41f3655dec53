import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loopback } from "./chat-loopback.js";
import {
  BIN,
  childEnv,
  ensureBuilt,
  finished,
  jsonScript,
  ofType,
  readJournal,
  removeTempDirs,
  sessionIds,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/** harness chat off a terminal: one message per input line, plain lines out, answers as lines. */
describe("harness chat in line mode (stdin is not a terminal)", () => {
  let config: string;
  beforeAll(async () => {
    ensureBuilt();
    config = join(await tempDir("harness-chat-config-"), "config.json");
    await writeFile(config, "{}");
  });
  afterAll(removeTempDirs);

  async function chat(workspace: string, script: string, input: string, ...flags: string[]) {
    const child = spawn(process.execPath, [BIN, "chat", "--script", script, ...flags], {
      cwd: workspace,
      env: { ...childEnv(), HARNESS_CONFIG: config },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin.end(input);
    return finished(child);
  }

  it("reads prompts and approval answers as lines, prints plain escaped lines, and exits 0 at the end of input", async () => {
    const workspace = await workspaceWith({ "hello.txt": "hello wrld\n" });
    const script = await jsonScript([
      { calls: [{ id: "r1", name: "read_file", arguments: { path: "hello.txt" } }] },
      {
        text: "Editing \u001b]0;pwned\u0007now.",
        calls: [
          {
            id: "e1",
            name: "edit_file",
            arguments: { path: "hello.txt", old_text: "wrld", new_text: "world" },
          },
        ],
      },
      { text: "Done.", calls: [] },
      { text: "Second turn here.", calls: [] },
    ]);
    const result = await chat(workspace, script, "fix the typo\ny\nand now?\n/model\n/nope\n");
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).not.toContain("\u001b");
    expect(out).toContain("│ Editing \\x1b]0;pwned\\x07now.");
    expect(out).toMatch(/-hello wrld\n\s+\+hello world/);
    expect(out).toContain("approved (once)");
    expect(out).toContain("│ Second turn here.");
    expect(out).toContain("model: scripted:");
    expect(out).toContain("unknown command /nope; try /help");
    expect(await readFile(join(workspace, "hello.txt"), "utf8")).toBe("hello world\n");
    const [id = ""] = sessionIds(workspace);
    const journal = await readJournal(workspace, id);
    expect(ofType(journal, "user.input").map((r) => r.data.text)).toEqual(["fix the typo", "and now?"]);
    expect(ofType(journal, "approval.decided").map((r) => r.data.decision)).toEqual(["allow"]);
  });

  it("denies when the input ends before an answer", async () => {
    const workspace = await workspaceWith({ "hello.txt": "hello wrld\n" });
    const script = await jsonScript([
      { calls: [{ id: "w1", name: "write_file", arguments: { path: "new.txt", content: "fresh\n" } }] },
      { text: "ok", calls: [] },
    ]);
    const result = await chat(workspace, script, "make a file\n");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("+++ b/new.txt");
    expect(result.stdout).toContain("denied");
    const [id = ""] = sessionIds(workspace);
    expect(ofType(await readJournal(workspace, id), "approval.decided").map((r) => r.data.decision)).toEqual([
      "deny",
    ]);
  });

  it("/compact summarizes the older turns between turns, journaled as context.compacted", async () => {
    const workspace = await workspaceWith({ "a.txt": "alpha\n" });
    const script = await jsonScript([
      { text: "Reading.", calls: [{ id: "r1", name: "read_file", arguments: { path: "a.txt" } }] },
      { text: "It says alpha.", calls: [] },
      { text: "The user asked what a.txt says; it says alpha.", calls: [] },
    ]);
    const result = await chat(workspace, script, "/compact\nwhat does a.txt say?\n/compact\n");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("nothing to compact yet");
    expect(result.stdout).toMatch(/compacted: \d+ messages replaced by a summary/);
    const [id = ""] = sessionIds(workspace);
    const journal = await readJournal(workspace, id);
    expect(ofType(journal, "context.compacted")).toHaveLength(1);
  });

  it("a running shell command's output lines are printed as they come, escaped and scrubbed, before its result line", async () => {
    const secret = "sk-live-0123456789abcdef";
    const workspace = await workspaceWith({ "key.txt": `${secret}\n` });
    const command =
      "echo first-line; sleep 1.5; printf 'esc \\033[31mred\\n'; cat key.txt; sleep 1.5; echo last-line";
    const script = await jsonScript([
      { calls: [{ id: "s1", name: "shell", arguments: { command } }] },
      { text: "Done.", calls: [] },
    ]);
    const child = spawn(process.execPath, [BIN, "chat", "--script", script, "--shell", "allow"], {
      cwd: workspace,
      env: { ...childEnv(), HARNESS_CONFIG: config, DEMO_API_KEY: secret },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin.end("run it\n");
    const result = await finished(child);
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).not.toContain("\u001b");
    expect(out).not.toContain(secret);
    const first = out.indexOf("    │ first-line\n");
    const red = out.indexOf("    │ esc \\x1b[31mred\n");
    const key = out.indexOf("    │ [redacted:DEMO_API_KEY]\n");
    const done = out.indexOf("✓ shell ok");
    expect(first).toBeGreaterThan(out.indexOf("… shell echo first-line"));
    expect(red).toBeGreaterThan(first);
    expect(key).toBeGreaterThan(red);
    expect(done).toBeGreaterThan(key);
    // Each line once, however often the output changed.
    expect(out.split("│ first-line").length).toBe(2);
  });

  it("two shell calls of one reply: every printed output line carries its own call's tag, escaped and scrubbed", async () => {
    const secret = "sk-live-fedcba9876543210";
    const workspace = await workspaceWith({ "key.txt": `${secret}\n` });
    const lines = (name: string) =>
      `echo ${name}-1; sleep 0.8; echo ${name}-2; sleep 0.8; printf '${name}-3 \\033[2J\\n'; cat key.txt; sleep 0.8; echo ${name}-4`;
    const script = await jsonScript([
      {
        calls: [
          { id: "s1", name: "shell", arguments: { command: lines("alpha") } },
          { id: "s2", name: "shell", arguments: { command: lines("beta") } },
        ],
      },
      { text: "Done.", calls: [] },
    ]);
    const child = spawn(process.execPath, [BIN, "chat", "--script", script, "--shell", "allow"], {
      cwd: workspace,
      env: { ...childEnv(), HARNESS_CONFIG: config, DEMO_API_KEY: secret },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin.end("run both\n");
    const result = await finished(child);
    expect(result.code).toBe(0);
    const out = result.stdout;
    expect(out).not.toContain("\u001b");
    expect(out).not.toContain(secret);
    const printed = out.split("\n").filter((line) => line.includes("│ alpha-") || line.includes("│ beta-"));
    // The engine runs shell calls one after another (the tool is exclusive); the tags do not rely on
    // that: calls that do run at once are covered in test/ui/line-ui.test.ts.
    expect(printed.length).toBeGreaterThanOrEqual(4);
    for (const line of printed) {
      expect(line).toMatch(line.includes("alpha-") ? /^\[shell#1\] {4}│ alpha-/ : /^\[shell#2\] {4}│ beta-/);
    }
    expect(out).toContain("[shell#1]    │ alpha-3 \\x1b[2J\n");
    expect(out).toContain("[shell#2]    │ beta-3 \\x1b[2J\n");
    expect(out).toContain("[shell#1]    │ [redacted:DEMO_API_KEY]\n");
    expect(out).toContain("[shell#2]    │ [redacted:DEMO_API_KEY]\n");
    expect(out).toMatch(/^\[shell#1\] … shell echo alpha-1/m);
    expect(out).toMatch(/^\[shell#2\] ✓ shell ok/m);
  });

  /** A chat whose default profile talks to a loopback server (model alpha-1b), fed `input`. */
  async function chatWithServer(server: { baseUrl: string }, input: string) {
    const profiles = join(await tempDir("harness-chat-models-"), "config.json");
    await writeFile(
      profiles,
      JSON.stringify({
        models: {
          small: {
            provider: "openai-compatible",
            model: "alpha-1b",
            base_url: server.baseUrl,
            api_key_env: "LOCAL_KEY",
          },
        },
        default_profile: "small",
      }),
    );
    const workspace = await workspaceWith({});
    const child = spawn(process.execPath, [BIN, "chat"], {
      cwd: workspace,
      env: { ...childEnv(), HARNESS_CONFIG: profiles, LOCAL_KEY: "k" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin.end(input);
    const result = await finished(child);
    const [id = ""] = sessionIds(workspace);
    return { result, journal: await readJournal(workspace, id) };
  }

  it("/model ID refuses at once an id the provider does not list, naming the close ones; a listed id switches", async () => {
    const server = await loopback();
    try {
      const { result, journal } = await chatWithServer(
        server,
        "hello\n/model zeta-8b\nagain\n/model zeta-7b\nthird\n",
      );
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(
        '/model: the provider does not list the model "zeta-8b" (close: zeta-7b); nothing was switched',
      );
      expect(result.stdout).toContain("model: zeta-7b");
      // The refused id never reached the server: the turn after it still used the old model.
      expect(server.models).toEqual(["alpha-1b", "alpha-1b", "zeta-7b"]);
      const switched = ofType(journal, "model.switched");
      expect(switched.map((r) => r.data.to)).toEqual([expect.objectContaining({ model: "zeta-7b" })]);
      const inputs = ofType(journal, "user.input");
      expect(switched[0]?.seq).toBeGreaterThan(inputs[1]?.seq ?? Number.POSITIVE_INFINITY);
    } finally {
      await server.close();
    }
  });

  it("/model ID takes an id unchecked, and says so, when the provider cannot list its models", async () => {
    const server = await loopback({ listing: false });
    try {
      const { result, journal } = await chatWithServer(server, "hello\n/model beta-2b\nagain\n");
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/note: "beta-2b" was not checked: the provider's model list: .*HTTP 404/);
      expect(server.models).toEqual(["alpha-1b", "beta-2b"]);
      expect(ofType(journal, "model.switched").map((r) => r.data.to)).toEqual([
        expect.objectContaining({ model: "beta-2b" }),
      ]);
    } finally {
      await server.close();
    }
  });

  it("shows a sub-agent's finished calls and its end under its path while the agent call runs, escaped", async () => {
    const workspace = await workspaceWith({ "hello.txt": "hello\n" });
    // A tool name the child's model made up: it is recorded as sent, control characters and all.
    const hostile = "evil\u001b]0;pwned\u0007";
    const script = join(await tempDir("harness-chat-agents-"), "script.json");
    await writeFile(
      script,
      JSON.stringify({
        replies: [
          { text: "", calls: [{ id: "a1", name: "agent", arguments: { task: "write", label: "worker" } }] },
          { text: "Delegated.", calls: [] },
        ],
        agents: {
          worker: {
            replies: [
              {
                text: "",
                calls: [
                  { id: "w1", name: "write_file", arguments: { path: "a.txt", content: "from the child\n" } },
                  { id: "w2", name: hostile, arguments: {} },
                ],
              },
              { text: "child done", calls: [] },
            ],
          },
        },
      }),
    );
    const child = spawn(process.execPath, [BIN, "chat", "--script", script, "--write", "allow"], {
      cwd: workspace,
      env: {
        ...childEnv(),
        HARNESS_CONFIG: config,
        HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-"),
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.stdin.end("delegate it\n");
    const result = await finished(child);
    expect(result.code, result.stderr).toBe(0);
    const out = result.stdout;
    expect(out).not.toContain("\u001b");
    const lines = out.split("\n");
    const childLines = lines.filter((line) => line.startsWith("  ↳ worker: "));
    expect(childLines[0]).toMatch(/^ {2}↳ worker: ✓ write_file ok {2}.*a\.txt/);
    // The child's model chose the second tool's name: it reaches the terminal escaped.
    expect(childLines[1]).toMatch(/^ {2}↳ worker: ✗ evil\\x1b\]0;pwned\\x07 /);
    expect(childLines.at(-1)).toBe("  ↳ worker: ended unverified");
    // The child's lines come while the agent call runs: before the parent's next reply.
    expect(lines.indexOf(childLines.at(-1)!)).toBeLessThan(lines.findIndex((l) => l.includes("Delegated.")));
    // One line per finished call of the child, as its own journal has them.
    const [id = ""] = sessionIds(workspace);
    const results = ofType(await readJournal(workspace, `${id}/worker`), "tool.result");
    expect(results.map((r) => [r.data.name, r.data.status])).toEqual([
      ["write_file", "ok"],
      [hostile, "invalid"],
    ]);
    expect(childLines).toHaveLength(results.length + 1);
  }, 60_000);

  it("refuses a goal argument with the command to use instead", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([]);
    const result = await chat(workspace, script, "", "fix", "it");
    expect(result.code).toBe(64);
    expect(result.stderr).toContain("harness chat takes no goal argument");
    expect(result.stderr).toContain("harness run fix it");
  });
});
