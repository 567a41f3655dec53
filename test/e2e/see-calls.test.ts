import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliResult,
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
  jsonScript,
  ofType,
  readJournal,
  removeTempDirs,
  sessionDir,
  startHarness,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A value harness scrubs from every output: its own environment holds it under a credential-like name. */
const SECRET = "sk-see-calls-0123456789";
const withSecret = { ...childEnv(), SEE_CALLS_API_TOKEN: SECRET };

/** `harness ARGS` with the secret in harness's environment (never in the sandboxed command's). */
function run(args: readonly string[]): Promise<CliResult> {
  return finished(startHarness(args, { env: withSecret }));
}

/** Reads, edits, then runs a command with 100 lines and the secret, and one with ~1.3 MB of output. */
const REPLIES = [
  { calls: [{ id: "r1", name: "read_file", arguments: { path: "notes.txt" } }] },
  {
    calls: [
      { id: "e1", name: "edit_file", arguments: { path: "notes.txt", old_text: "draft", new_text: "final" } },
    ],
  },
  {
    calls: [
      { id: "s1", name: "shell", arguments: { command: "seq 1 100; cat key.txt; echo to-stderr >&2" } },
    ],
  },
  { calls: [{ id: "s2", name: "shell", arguments: { command: "seq 1 200000" } }] },
  { text: "done" },
];

const files = () => ({ "notes.txt": "title\nstatus: draft\nend\n", "key.txt": `${SECRET}\n` });

/**
 * The REPLIES session in a fresh workspace, writes and commands allowed: `flags` go after the
 * allow flags, `global` before `run`.
 */
async function runReplies(flags: string[] = [], global: string[] = []) {
  const workspace = await workspaceWith(files());
  const script = await jsonScript(REPLIES);
  const result = await run([
    ...global,
    "run",
    "--script",
    script,
    "--workspace",
    workspace,
    "--write",
    "allow",
    "--shell",
    "allow",
    ...flags,
    "go",
  ]);
  return { workspace, result };
}

describe("harness run shows what each call did", () => {
  it("an edit's diff and a command's first and last lines, scrubbed, as the calls finish", async () => {
    const { result } = await runReplies();
    expectExit(result, 0);
    const err = result.stderr;
    // The edit's unified diff, under the quoted-text prefix, after the call's status line.
    expect(err).toMatch(
      /✓ edit_file ok [^\n]*\n {2}│ --- a\/notes\.txt\n {2}│ \+\+\+ b\/notes\.txt\n {2}│ @@ -1,3 \+1,3 @@\n {2}│ {2}title\n {2}│ -status: draft\n {2}│ \+status: final\n {2}│ {2}end\n/,
    );
    // The command's first 8 and last 8 lines; the middle elided with the command that shows it all.
    const s1 = err.slice(err.indexOf("✓ shell ok"), err.indexOf("✓ shell ok", err.indexOf("✓ shell ok") + 1));
    for (const n of [1, 8, 94, 100]) expect(s1).toContain(`  │ ${n}\n`);
    for (const n of [9, 50, 93]) expect(s1).not.toContain(`  │ ${n}\n`);
    expect(s1).toMatch(/│ … 85 lines not shown \(all of them: harness inspect \S+ --call s1 --workspace /);
    expect(s1).toContain("  stderr:\n  │ to-stderr\n");
    // The secret is scrubbed in what is shown, as in the result.
    expect(s1).toContain("  │ [redacted:SEE_CALLS_API_TOKEN]\n");
    expect(result.stdout + err).not.toContain(SECRET);
    // Output larger than the result keeps: its start and end, the bytes between not shown.
    const s2 = err.slice(err.lastIndexOf("✓ shell ok"));
    expect(s2).toContain("  │ 1\n");
    expect(s2).toContain("  │ 200000\n");
    expect(s2).toMatch(/│ … \d+ bytes not shown \(all of it: harness inspect \S+ --call s2/);
    expect(s2).not.toContain("  │ 100000\n");
  });

  it("--quiet-calls keeps the status lines and shows no diff and no output", async () => {
    const { workspace, result } = await runReplies(["--quiet-calls"]);
    expectExit(result, 0);
    expect(result.stderr).toContain("✓ edit_file ok");
    expect(result.stderr).toContain("✓ shell ok");
    expect(result.stderr).not.toContain("│ -status: draft");
    expect(result.stderr).not.toContain("│ 100\n");
    expect(result.stderr).not.toContain("stdout:");
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("title\nstatus: final\nend\n");
  });

  it("-q leaves only the verdict on stdout and nothing on stderr", async () => {
    const { result } = await runReplies([], ["-q"]);
    expectExit(result, 0);
    expect(result.stdout).toBe("status    unverified\n");
    expect(result.stderr).toBe("");
  });

  it("a failed acceptance check prints its output, scrubbed and bounded", async () => {
    const workspace = await workspaceWith(files());
    const script = await jsonScript([{ text: "nothing to do" }]);
    const result = await run([
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--accept",
      "seq 1 40; cat key.txt; echo FAILED-CHECK; exit 1",
      "go",
    ]);
    expectExit(result, 2);
    const err = result.stderr.slice(result.stderr.indexOf("✗ acceptance:"));
    expect(err).toContain("  │ 1\n");
    expect(err).toContain("  │ [redacted:SEE_CALLS_API_TOKEN]\n  │ FAILED-CHECK\n");
    expect(err).toMatch(/│ … \d+ lines not shown/);
    expect(err).not.toContain("  │ 20\n");
    expect(result.stdout + result.stderr).not.toContain(SECRET);
    // A passing check prints no output.
    const passing = await run([
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--accept",
      "echo PASSED-CHECK",
      "go",
    ]);
    expectExit(passing, 0);
    expect(passing.stderr).toContain("✓ acceptance: echo PASSED-CHECK");
    expect(passing.stderr).not.toContain("│ PASSED-CHECK");
  });
});

describe("harness inspect SESSION --call ID", () => {
  it("prints a command's whole output, the bytes of its artifact; --json too; an unknown id is an error", async () => {
    const { workspace, result } = await runReplies(["--json"]);
    expectExit(result, 0);
    const id = (JSON.parse(result.stdout) as { session: string }).session;
    const records = await readJournal(workspace, id);
    const s2 = ofType(records, "tool.result").find((r) => r.data.call_id === "s2");
    expect(s2).toBeDefined();
    const stdout = (s2!.data.data as { stdout: { truncated: boolean; artifact: { id: string } } }).stdout;
    // The journal keeps a projection; the artifact holds the whole output.
    expect(stdout.truncated).toBe(true);
    const whole = await readFile(join(sessionDir(workspace, id), "artifacts", stdout.artifact.id), "utf8");
    expect(whole.endsWith("199999\n200000\n")).toBe(true);

    const shown = await harness(["inspect", id, "--workspace", workspace, "--call", "s2"]);
    expectExit(shown, 0);
    const header = `── stdout (${Buffer.byteLength(whole)} bytes, artifact ${stdout.artifact.id}) ──\n`;
    expect(shown.stdout).toContain(`${header}${whole}`);
    expect(shown.stdout).toContain('arguments {"command":"seq 1 200000"}');

    const json = await harness(["inspect", id, "--workspace", workspace, "--call", "s2", "--json"]);
    expectExit(json, 0);
    const view = JSON.parse(json.stdout) as {
      name: string;
      status: string;
      stdout: { text: string; complete: boolean };
    };
    expect([view.name, view.status, view.stdout.complete]).toEqual(["shell", "ok", true]);
    expect(view.stdout.text).toBe(whole);

    // The small command's output whole, the secret scrubbed as it was recorded.
    const small = await harness(["inspect", id, "--workspace", workspace, "--call", "s1", "--json"]);
    const smallView = JSON.parse(small.stdout) as { stdout: { text: string }; stderr: { text: string } };
    expect(smallView.stdout.text).toContain("50\n");
    expect(smallView.stdout.text).toContain("[redacted:SEE_CALLS_API_TOKEN]");
    expect(smallView.stderr.text).toBe("to-stderr\n");

    const unknown = await harness(["inspect", id, "--workspace", workspace, "--call", "nope"]);
    expectExit(unknown, 64);
    expect(unknown.stderr).toContain(`no call "nope" in session ${id}; its calls: r1, e1, s1, s2`);
    expect(unknown.stdout).toBe("");
  });
});
