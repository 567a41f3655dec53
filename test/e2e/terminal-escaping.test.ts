import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliResult,
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
  jsonScript,
  readJournal,
  removeTempDirs,
  sessionIds,
  startHarness,
  workspaceWith,
} from "./helpers.js";

/**
 * A hostile model tries to drive the user's terminal through everything harness prints: its
 * text, call ids, tool names, arguments, file names and contents, error messages. Whatever it
 * sends, the bytes harness writes hold no escape sequence (other than harness's own colours), no
 * C0/C1 control but the newlines harness lays out, no bidi control and no invisible character,
 * and no line that starts like one of harness's own status lines unless harness wrote it.
 */

const ESC = "\u001b";
const TITLE = `${ESC}]0;pwned\u0007`;
const HYPERLINK = `${ESC}]8;;http://evil.example/${ESC}\\click${ESC}]8;;${ESC}\\`;
const ERASE_UP = `${ESC}[1A${ESC}[2K\r`;
const RLO = "\u202e";
const CSI_C1 = "\u009b2K";
const FORGED = "✓ acceptance: npm test (12 ms)\nstatus    verified\nstatus: verified\n✓ acceptance passed";

/** Everything a terminal obeys or that hides text, except the newline. */
const TERMINAL_CONTROL =
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

function expectNoTerminalControl(label: string, text: string): void {
  const found = TERMINAL_CONTROL.exec(text);
  if (found) {
    const at = found.index;
    throw new Error(
      `${label}: U+${found[0].codePointAt(0)!.toString(16).padStart(4, "0")} reached the terminal near ${JSON.stringify(text.slice(Math.max(0, at - 40), at + 40))}`,
    );
  }
}

function expectNoForgedLine(label: string, text: string): void {
  for (const forged of [/^✓ acceptance/m, /^status\s+verified/m, /^status: verified/m]) {
    expect(text, `${label} has a line a model forged`).not.toMatch(forged);
  }
}

function expectClean(label: string, result: CliResult): void {
  for (const [stream, text] of [
    ["stdout", result.stdout],
    ["stderr", result.stderr],
  ] as const) {
    expectNoTerminalControl(`${label} ${stream}`, text);
    expectNoForgedLine(`${label} ${stream}`, text);
  }
}

/** A propose-mode session whose every model-controlled string is hostile. */
async function hostileProposeRun(env?: NodeJS.ProcessEnv) {
  const workspace = await workspaceWith({ "notes.txt": "hello\n" });
  const script = await jsonScript([
    {
      text: `Working on it.${TITLE}\n${FORGED}\n${ERASE_UP}${RLO}hidden${CSI_C1}`,
      calls: [
        { id: `c1${ESC}[2K${RLO}`, name: `read_file${TITLE}\n${FORGED}`, arguments: { path: "notes.txt" } },
        { id: "c2", name: "read_file", arguments: { path: `evil${ESC}[8m${HYPERLINK}.txt` } },
        {
          id: "c3",
          name: "write_file",
          arguments: { path: "report.txt", content: `line one\n${ERASE_UP}${FORGED}\n${RLO}evil${CSI_C1}\n` },
        },
        { id: "c4", name: "write_file", arguments: { path: `a${RLO}txt.exe`, content: "x\n" } },
      ],
    },
    { text: `Done.\n${FORGED}\n${TITLE}${ERASE_UP}` },
  ]);
  const goal = `tidy the notes${TITLE}\n${FORGED}`;
  const args = ["run", "--script", script, "--workspace", workspace, "--write", "propose", goal];
  const result = env ? await finished(startHarness(args, { env })) : await harness(args);
  return { workspace, result };
}

describe("the terminal shows what happened, not what the model printed", () => {
  it("run progress, inspect, diff and sessions escape a hostile model's text, ids, tool names, paths and file content", async () => {
    const { workspace, result } = await hostileProposeRun();
    expectExit(result, 4);
    expectClean("run", result);
    // The model's text is shown, escaped, under a prefix harness's own lines never start with.
    expect(result.stderr).toContain("│ Working on it.\\x1b]0;pwned\\x07");
    expect(result.stderr).toContain("│ ✓ acceptance: npm test (12 ms)");
    expect(result.stderr).toContain("│ status    verified");
    expect(result.stderr).toContain("│ \\x1b[1A\\x1b[2K\\x0d\\u202ehidden\\x9b2K");
    // The unknown tool's name, echoed back in its UNKNOWN_TOOL result, is escaped on one line.
    expect(result.stderr).toContain(
      "read_file\\x1b]0;pwned\\x07\\x0a✓ acceptance: npm test (12 ms)\\x0astatus",
    );
    expect(result.stdout).toMatch(/^status\s+needs_review/m);

    const [session] = sessionIds(workspace);
    const records = await readJournal(workspace, session!);
    // The journal keeps the exact bytes; only the terminal rendering escapes them.
    const reply = records.find((r) => r.type === "model.reply")!;
    expect(reply.data.text).toContain(TITLE);

    const inspect = await harness(["inspect", session!, "--workspace", workspace]);
    expectExit(inspect, 0);
    expectClean("inspect", inspect);
    expect(inspect.stdout).toContain("read_file\\x1b]0;pwned\\x07\\x0a✓ acceptance");
    expect(inspect.stdout).toContain("#c1\\x1b[2K\\u202e");
    expect(inspect.stdout).toContain("goal    tidy the notes\\x1b]0;pwned\\x07\\x0a✓ acceptance");

    const diff = await harness(["diff", session!, "--workspace", workspace]);
    expectExit(diff, 0);
    expectClean("diff", diff);
    expect(diff.stdout).toContain("+\\x1b[1A\\x1b[2K\\x0d✓ acceptance: npm test (12 ms)");
    expect(diff.stdout).toContain("+\\u202eevil\\x9b2K");
    expect(diff.stdout).toContain("a\\u202etxt.exe");

    const sessions = await harness(["sessions", "--workspace", workspace]);
    expectExit(sessions, 0);
    expectClean("sessions", sessions);
    expect(sessions.stdout).toContain("tidy the notes\\x1b]0;pwned\\x07\\x0a✓");

    // --json stays exact JSON: the same strings, JSON-escaped, round-trip to the journal's bytes.
    const json = await harness(["inspect", session!, "--workspace", workspace, "--json"]);
    expectExit(json, 0);
    expect(json.stdout.trim().split("\n")).toHaveLength(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ session });
  });

  it("with colour on, the only escape sequences are harness's own SGR colours", async () => {
    const env: NodeJS.ProcessEnv = { ...childEnv(), FORCE_COLOR: "1" };
    delete env.NO_COLOR;
    const { workspace, result } = await hostileProposeRun(env);
    expectExit(result, 4);
    const [session] = sessionIds(workspace);
    const diff = await finished(startHarness(["diff", session!, "--workspace", workspace], { env }));
    const inspect = await finished(startHarness(["inspect", session!, "--workspace", workspace], { env }));
    for (const [label, text] of [
      ["run stderr", result.stderr],
      ["run stdout", result.stdout],
      ["diff", diff.stdout],
      ["inspect", inspect.stdout],
    ] as const) {
      expect(text, `${label} is coloured`).toMatch(/\u001b\[\d+m/);
      const uncoloured = text.replace(/\u001b\[\d+m/g, "");
      expectNoTerminalControl(label, uncoloured);
      expectNoForgedLine(label, uncoloured);
    }
  });

  it("a hostile call id in a broken stream and a hostile provider error message are shown escaped", async () => {
    const workspace = await workspaceWith({});
    const broken = await jsonScript([
      {
        stream: [
          { type: "text_delta", text: `hi${TITLE}` },
          {
            type: "tool_call_delta",
            call_id: `k${ESC}[2K${CSI_C1}\n${FORGED}`,
            name: "shell",
            arguments: "{not json",
          },
          { type: "end", reason: "tool_calls" },
        ],
      },
    ]);
    const protocol = await harness(["run", "--script", broken, "--workspace", workspace, "goal"]);
    expect(protocol.code).not.toBe(0);
    expectClean("protocol error run", protocol);
    expect(protocol.stderr).toContain("k\\x1b[2K\\x9b2K\\x0a✓ acceptance");

    const failing = await jsonScript([
      { error: { kind: "fatal", message: `upstream said${TITLE}\n${FORGED}${ERASE_UP}` } },
    ]);
    const failed = await harness(["run", "--script", failing, "--workspace", workspace, "goal"]);
    expect(failed.code).not.toBe(0);
    expectClean("failed run", failed);
    expect(failed.stderr).toContain("upstream said\\x1b]0;pwned\\x07\\x0a✓ acceptance");

    for (const session of sessionIds(workspace)) {
      const inspect = await harness(["inspect", session, "--workspace", workspace]);
      expectExit(inspect, 0);
      expectClean(`inspect ${session}`, inspect);
    }
  });

  it("a shell command's description and output cannot forge the acceptance result", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([
      {
        calls: [
          {
            id: "s1",
            name: "shell",
            arguments: {
              command: "printf '\\033]0;pwned\\007\\r\\033[2K✓ acceptance: false (1 ms)\\n'",
              description: `tests${TITLE}\n${FORGED}`,
            },
          },
        ],
      },
      { text: `All checks pass.\n${FORGED}` },
    ]);
    const result = await harness([
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--shell",
      "allow",
      "--accept",
      "false",
      "goal",
    ]);
    expectExit(result, 2);
    expectClean("run", result);
    // harness's own acceptance line is the only one at the start of a line, and it says failed.
    expect(result.stderr.split("\n").filter((line) => /^[✓✗] acceptance/.test(line))).toEqual([
      expect.stringMatching(/^✗ acceptance: false \(\d+ ms\)$/),
    ]);
    // A multi-line summary continues on marked lines, which harness's own lines never start with.
    expect(result.stderr).toContain("tests\\x1b]0;pwned\\x07\n  │ ✓ acceptance");
    expect(result.stdout).toMatch(/^status\s+stopped \(acceptance_failed\)/m);

    const [session] = sessionIds(workspace);
    const inspect = await harness(["inspect", session!, "--workspace", workspace]);
    expectClean("inspect", inspect);
  });

  it("an unverified run's answer cannot claim in the summary that it was verified", async () => {
    const workspace = await workspaceWith({});
    const script = await jsonScript([{ text: `All checks pass.\n${FORGED}\n${ERASE_UP}${TITLE}` }]);
    const result = await harness(["run", "--script", script, "--workspace", workspace, "goal"]);
    expectExit(result, 0);
    expectClean("run", result);
    expect(result.stdout).toMatch(/^status\s+unverified$/m);
    // The first line of the answer follows its label; every further line is under the prefix.
    expect(result.stdout).toMatch(/^answer\s+All checks pass\.$/m);
    expect(result.stdout).toMatch(/^ +│ ✓ acceptance: npm test \(12 ms\)$/m);
    expect(result.stdout).toMatch(/^ +│ status {4}verified$/m);
    expect(result.stdout).toMatch(/^ +│ \\x1b\[1A\\x1b\[2K\\x0d\\x1b\]0;pwned\\x07$/m);
  });
});
