import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * A hostile model asks glob (or grep's include filter) for a pattern whose backtracking regular
 * expression takes hours on a file name it made: harness matched it on its main thread, so the
 * whole process froze (no tool timeout, no Ctrl-C, every other session of a server). Before the
 * fix, the glob below (17 wildcards) against one 40-character name took 111 s; against a
 * 250-character name it would not finish.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const LONG_NAME = `${"a".repeat(250)}`;

describe("glob patterns that backtrack catastrophically", () => {
  it("are refused at once with a reason; a pattern within the limit still matches", async () => {
    const workspace = await workspaceWith({ [LONG_NAME]: "x\n", "src/main.ts": "export {};\n" });
    const configDir = await tempDir("harness-config-");
    await writeFile(join(configDir, "config.json"), "{}\n");
    const script = await jsonScript([
      {
        calls: [
          { id: "g1", name: "glob", arguments: { pattern: `**/${"*a".repeat(16)}*b` } },
          { id: "g2", name: "glob", arguments: { pattern: "*a*/*a*/*a*/c" } },
          { id: "g3", name: "grep", arguments: { pattern: "x", include: "*a*a*a*a*b" } },
          { id: "g4", name: "glob", arguments: { pattern: "**/*ma*.ts" } },
        ],
      },
      { text: "done" },
    ]);
    const started = Date.now();
    const child = startHarness(
      [
        "run",
        "--script",
        script,
        "--workspace",
        workspace,
        "--write",
        "deny",
        "--shell",
        "deny",
        "--json",
        "look",
      ],
      { env: { ...childEnv(), HARNESS_CONFIG: join(configDir, "config.json") } },
    );
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const result = await finished(child).finally(() => clearTimeout(timer));
    expect(Date.now() - started).toBeLessThan(30_000);
    expectExit(result, 0);
    const session = String(jsonSummary(result).session);
    const results = resultsByCall(await readJournal(workspace, session));
    for (const id of ["g1", "g2"]) {
      expect(results.get(id)).toMatchObject({ status: "invalid", error_type: "INVALID_PATH" });
      expect(String(results.get(id)?.content)).toMatch(/wildcards \(\* or \*\*\); at most 3 are allowed/);
    }
    expect(results.get("g3")).toMatchObject({ status: "invalid", error_type: "SEMANTIC_VALIDATION_ERROR" });
    expect(String(results.get("g3")?.content)).toContain("include: the pattern has 5 wildcards");
    expect(results.get("g4")).toMatchObject({ status: "ok", content: "src/main.ts" });
  }, 90_000);
});
