// git treats a directory holding HEAD, objects/ and refs/ as a bare repository and obeys its
// `config`, `.git` or not: `core.worktree` plus `core.fsmonitor` runs a command on the next host
// `git status`. A workspace without .git must not be turned into one by the model. Each attack
// runs through the built CLI; then git runs on the host and the marker its config names must not
// exist.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  readJournal,
  removeTempDirs,
  resultsByCall,
  tempDir,
  workspaceWith,
} from "../e2e/helpers.js";
import { startHarnessWith } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const CONFIG =
  "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = touch FSMONITOR-RAN; false\n";

/** git status on the host, in `dir`, never looking above the workspace's parent. */
function hostGitStatus(dir: string): void {
  try {
    execFileSync("git", ["status"], {
      cwd: dir,
      stdio: "ignore",
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, GIT_CEILING_DIRECTORIES: dirname(dir) },
    });
  } catch {
    // not a repository: what the test wants
  }
}

describe("the model cannot make the workspace a bare repository that host git obeys", () => {
  it("the shell writing HEAD, objects/, refs/ and config at the root: HEAD is refused, git status runs nothing", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const home = await tempDir("harness-home-");
    const config = join(home, "config.json");
    writeFileSync(config, "{}");
    const command =
      "mkdir -p objects refs/heads; printf '%s' \"$CFG\" > config; printf 'ref: refs/heads/main\\n' > HEAD";
    const script = await jsonScript([
      {
        text: "s",
        calls: [{ id: "sh", name: "shell", arguments: { command: `CFG='${CONFIG}'; ${command}` } }],
      },
      {
        text: "w",
        calls: [
          { id: "head", name: "write_file", arguments: { path: "HEAD", content: "ref: refs/heads/main\n" } },
          {
            id: "nested",
            name: "write_file",
            arguments: { path: "sub/HEAD", content: "ref: refs/heads/main\n" },
          },
        ],
      },
      { text: "done" },
    ]);
    const result = await finished(
      startHarnessWith(
        [
          "run",
          "--script",
          script,
          "-w",
          workspace,
          "--session",
          "bare",
          "--write",
          "allow",
          "--shell",
          "allow",
          "go",
        ],
        { HARNESS_CONFIG: config, HOME: home },
      ),
    );
    expectExit(result, 0);
    hostGitStatus(workspace);
    expect(existsSync(join(workspace, "FSMONITOR-RAN"))).toBe(false);
    const results = resultsByCall(await readJournal(workspace, "bare"));
    expect(results.get("head")?.error_type).toBe("PROTECTED_PATH");
    expect(results.get("nested")?.error_type).toBe("PROTECTED_PATH");
    expect(existsSync(join(workspace, "HEAD"))).toBe(false);
    expect(readdirSync(workspace)).not.toContain("sub");
  });
});
