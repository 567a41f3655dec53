import { readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  journalFile,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const USER_RULES = "Always answer in English.\n";
const ROOT_RULES = "Run the tests before finishing.\n";

/**
 * The scripted model answers with the system message it was sent, so the run's answer shows
 * byte for byte what a real model would have read.
 */
const ECHO_SYSTEM = "export default function echo(messages) { return { text: messages[0].content }; }\n";

describe("AGENTS.md through the CLI", () => {
  let workspace: string;
  let script: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    const configDir = await tempDir("harness-config-");
    await writeFile(join(configDir, "config.json"), "{}\n");
    await writeFile(join(configDir, "AGENTS.md"), USER_RULES);
    env = { ...childEnv(), HARNESS_CONFIG: join(configDir, "config.json") };
    workspace = await workspaceWith({ "AGENTS.md": ROOT_RULES, "notes.txt": "draft\n" });
    script = join(await tempDir("harness-script-"), "echo.mjs");
    await writeFile(script, ECHO_SYSTEM);
  });

  const harness = (args: string[]) => finished(startHarness(args, { env }));

  it("the model is sent the user's and the project's instructions and the environment it works in", async () => {
    const result = await harness([
      "run",
      ...[
        "--script",
        script,
        "--workspace",
        workspace,
        "--session",
        "s1",
        "--write",
        "deny",
        "--shell",
        "deny",
      ],
      ...["--sandbox", "read-only", "--json", "summarise the notes"],
    ]);
    expectExit(result, 0);
    const answer = String(jsonSummary(result).answer);
    expect(answer).toContain(
      "- Sandbox profile: read-only: commands run in a read-only sandbox: they cannot change the workspace.\n" +
        "- Write mode: deny: file writes are denied; do not try to change files.\n" +
        "- Shell mode: deny: shell commands are denied; use the file tools.",
    );
    expect(answer).toMatch(/- Operating system: linux \(\w+\); shell: /);
    const userPath = env.HARNESS_CONFIG!.replace(/config\.json$/, "AGENTS.md");
    expect(
      answer.endsWith(
        `Instructions from ${userPath} (the user's instructions for every project). Follow them; they cannot grant permissions.\n` +
          `<instructions>\n${USER_RULES}\n</instructions>\n\n` +
          "Instructions from AGENTS.md (the project's instructions). Follow them; they cannot grant permissions.\n" +
          `<instructions>\n${ROOT_RULES}\n</instructions>`,
      ),
    ).toBe(true);
    const loaded = ofType(await readJournal(workspace, "s1"), "instructions.loaded");
    expect(loaded.map((r) => (r.data.files as { path: string }[]).map((f) => f.path))).toEqual([
      [userPath, "AGENTS.md"],
    ]);
  });

  it("resume refuses once AGENTS.md changed (exit 64, journal untouched) and continues once it is restored", async () => {
    const before = await readFile(journalFile(workspace, "s1"));
    await writeFile(join(workspace, "AGENTS.md"), "Skip the tests.\n");
    const refused = await harness(["resume", "s1", "--script", script, "--workspace", workspace]);
    expectExit(refused, 64);
    expect(refused.stderr).toContain("project instructions (AGENTS.md changed)");
    expect(refused.stderr).toContain("restore the instructions");
    expect(await readFile(journalFile(workspace, "s1"))).toEqual(before);

    await writeFile(join(workspace, "AGENTS.md"), ROOT_RULES);
    const resumed = await harness(["resume", "s1", "--script", script, "--workspace", workspace, "--json"]);
    expectExit(resumed, 0);
    expect(jsonSummary(resumed).status).toBe("unverified");
  });

  it("inspect shows what was loaded", async () => {
    const result = await harness(["inspect", "s1", "--workspace", workspace]);
    expectExit(result, 0);
    expect(result.stdout).toMatch(
      /instructions at start: .*AGENTS\.md \(26 bytes, sha256 [0-9a-f]{12}\), AGENTS\.md \(32 bytes/,
    );
  });
});

// A hostile repository ships `AGENTS.md` as a symlink to the user's untracked `.env`. The root
// file is read like any file the agent could read: the default rule that denies `.env` to
// read_file (matched on where the link leads) keeps the secret out of the request and the journal.
describe("a root AGENTS.md that leads to a file the policy denies", () => {
  it("is not read: the secret reaches neither the model nor the journal", async () => {
    const configDir = await tempDir("harness-config-");
    await writeFile(join(configDir, "config.json"), "{}\n");
    const env = { ...childEnv(), HARNESS_CONFIG: join(configDir, "config.json") };
    const workspace = await workspaceWith({ ".env": "API_TOKEN=hunter2-secret\n", "notes.txt": "x\n" });
    await symlink(".env", join(workspace, "AGENTS.md"));
    const script = join(await tempDir("harness-script-"), "echo.mjs");
    await writeFile(script, ECHO_SYSTEM);
    const result = await finished(
      startHarness(["run", "--script", script, "--workspace", workspace, "--session", "s", "--json", "go"], {
        env,
      }),
    );
    expectExit(result, 0);
    expect(String(jsonSummary(result).answer)).not.toContain("hunter2-secret");
    const journal = await readFile(journalFile(workspace, "s"), "utf8");
    expect(journal).not.toContain("hunter2-secret");
    const loaded = ofType(await readJournal(workspace, "s"), "instructions.loaded");
    expect(loaded.map((r) => r.data.files)).toEqual([[]]);
  });
});
