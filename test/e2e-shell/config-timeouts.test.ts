import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  finished,
  jsonScript,
  ofType,
  readJournal,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "../e2e/helpers.js";
import { startHarnessWith } from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(() => removeTempDirs());

describe("per-tool timeouts from the user config", () => {
  it("a config timeout for shell overrides the tool's default, and the call ends as a timeout", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const configDir = await tempDir("harness-config-");
    const config = join(configDir, "config.json");
    await writeFile(config, JSON.stringify({ timeouts: { shell: 400 } }));
    const script = await jsonScript([
      { calls: [{ id: "s1", name: "shell", arguments: { command: "sleep 30.25" } }] },
      { text: "done" },
    ]);
    const child = startHarnessWith(
      [
        "run",
        "--script",
        script,
        "--workspace",
        workspace,
        "--shell",
        "allow",
        "--session",
        "t",
        "--json",
        "sleep",
      ],
      { HARNESS_CONFIG: config },
    );
    const result = await finished(child);
    expect(result.code).toBe(0);
    const records = await readJournal(workspace, "t");
    const [shell] = ofType(records, "tool.result");
    expect(shell?.data).toMatchObject({ call_id: "s1", status: "timeout", error_type: "TIMEOUT" });
    const duration = (shell?.data as { duration_ms?: number } | undefined)?.duration_ms ?? Number.NaN;
    expect(duration).toBeLessThan(25_000);
  });

  it("a malformed timeouts section stops the run before it starts, naming the file", async () => {
    const workspace = await workspaceWith({});
    const configDir = await tempDir("harness-config-");
    const config = join(configDir, "config.json");
    await writeFile(config, JSON.stringify({ timeouts: { shell: "soon" } }));
    const script = await jsonScript([{ text: "done" }]);
    const result = await finished(
      startHarnessWith(["run", "--script", script, "--workspace", workspace, "--session", "t", "x"], {
        HARNESS_CONFIG: config,
      }),
    );
    expect(result.code).toBe(64);
    expect(result.stderr).toContain("config.json");
    await expect(readJournal(workspace, "t")).rejects.toThrow();
  });
});
