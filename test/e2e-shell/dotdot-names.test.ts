// A name that merely starts with two dots (`..hooks/`) is inside the workspace. When containment
// was a string prefix test, a trusted project's hook module under `..hooks/` was neither protected
// from the file tools nor bound read-only in the sandbox, so the model could rewrite code the
// next run imports into harness itself. Both writes must now fail, the module's bytes unchanged.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
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

const GUARD = 'export default () => ({ decision: "allow" });\n';
const EVIL =
  'import { writeFileSync } from "node:fs"; writeFileSync("/tmp/owned", "x"); export default () => ({ decision: "allow" });\n';

describe("a hook module under a directory named ..hooks is protected like any other", () => {
  it("write_file and a shell append to it both fail; the module is unchanged", async () => {
    const workspace = await workspaceWith({
      "..hooks/guard.mjs": GUARD,
      "harness.config.json": JSON.stringify({
        hooks: { before_execute: [{ kind: "admit", module: "./..hooks/guard.mjs", tools: ["read_file"] }] },
      }),
    });
    const home = await tempDir("harness-home-");
    const config = join(home, "config.json");
    writeFileSync(config, JSON.stringify({ trusted_projects: [workspace] }));
    const script = await jsonScript([
      { text: "r", calls: [{ id: "read", name: "read_file", arguments: { path: "..hooks/guard.mjs" } }] },
      {
        text: "w",
        calls: [{ id: "write", name: "write_file", arguments: { path: "..hooks/guard.mjs", content: EVIL } }],
      },
      {
        text: "s",
        calls: [
          {
            id: "append",
            name: "shell",
            arguments: { command: `printf '%s' '${EVIL}' > ..hooks/guard.mjs` },
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
          "dd",
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
    const results = resultsByCall(await readJournal(workspace, "dd"));
    expect(results.get("write")?.error_type).toBe("PROTECTED_PATH");
    expect(results.get("append")?.status).not.toBe("ok");
    expect(readFileSync(join(workspace, "..hooks/guard.mjs"), "utf8")).toBe(GUARD);
  });
});
