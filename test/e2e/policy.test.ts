import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarnessWith } from "../e2e-shell/helpers.js";
import {
  ensureBuilt,
  expectExit,
  finished,
  harness,
  jsonScript,
  ofType,
  readJournal,
  removeTempDirs,
  sessionIds,
  tempDir,
  workspaceWith,
} from "./helpers.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

describe("policy from the CLI", () => {
  it("policy explain names the deciding rule and the file it came from", async () => {
    const workspace = await workspaceWith({
      "harness.config.json": JSON.stringify({
        permissions: { deny: ["read_file(secrets/**)"], allow: ["edit_file(**)"] },
      }),
    });
    const configDir = await tempDir("harness-user-config-");
    const config = join(configDir, "config.json");
    await writeFile(config, JSON.stringify({ permissions: { ask: ["edit_file(src/**)"] } }));
    const env = { HARNESS_CONFIG: config };

    const denied = await finished(
      startHarnessWith(
        ["policy", "explain", "read_file", '{"path":"secrets/key.pem"}', "--workspace", workspace, "--json"],
        env,
      ),
    );
    expectExit(denied, 0);
    expect(JSON.parse(denied.stdout)).toMatchObject({ decision: "deny", rule: "read_file(secrets/**)" });
    expect(JSON.parse(denied.stdout).source).toContain("harness.config.json");

    // The untrusted project's allow is ignored; the user's ask decides.
    const asked = await finished(
      startHarnessWith(
        [
          "policy",
          "explain",
          "edit_file",
          '{"path":"src/a.ts","old_text":"a","new_text":"b"}',
          "--workspace",
          workspace,
          "--json",
        ],
        env,
      ),
    );
    expect(JSON.parse(asked.stdout)).toMatchObject({ decision: "ask", rule: "edit_file(src/**)" });
    expect(JSON.parse(asked.stdout).source).toContain("user config");

    const bad = await finished(
      startHarnessWith(["policy", "explain", "read_file", "{not json", "--workspace", workspace], env),
    );
    expectExit(bad, 64);
  });

  it("a rule that does not parse stops the run before it starts, naming the file", async () => {
    const workspace = await workspaceWith({
      "harness.config.json": JSON.stringify({ permissions: { deny: ["read_file(unclosed"] } }),
    });
    const script = await jsonScript([{ text: "done" }]);
    const result = await harness([
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--session",
      "x",
      "goal",
    ]);
    expectExit(result, 64);
    expect(result.stderr).toContain("harness.config.json");
    expect(sessionIds(workspace)).toEqual([]);
  });

  it("--read-path/--edit-path scope every call; a listed path that does not exist is refused at start", async () => {
    const workspace = await workspaceWith({
      "README.md": "sum adds\n",
      "src/sum.ts": "a - b\n",
      ".env": "KEY=1\n",
    });
    const script = await jsonScript([
      {
        calls: [
          { id: "r-env", name: "read_file", arguments: { path: ".env" } },
          { id: "w-readme", name: "write_file", arguments: { path: "README.md", content: "changed\n" } },
          { id: "r-src", name: "read_file", arguments: { path: "src/sum.ts" } },
        ],
      },
      { text: "done" },
    ]);
    const args = [
      "--script",
      script,
      "--workspace",
      workspace,
      "--write",
      "allow",
      "--read-path",
      "README.md",
      "--read-path",
      "src/sum.ts",
      "--edit-path",
      "src/sum.ts",
    ];
    const result = await harness(["run", ...args, "--session", "scoped", "scoped goal"]);
    // Its only change (w-readme) was out of scope: the run stops rather than ending unverified.
    expectExit(result, 2);
    expect(result.stdout).toContain("stopped (changes_denied)");
    const records = await readJournal(workspace, "scoped");
    const statuses = ofType(records, "tool.result").map((r) => [
      (r.data as { call_id: string }).call_id,
      (r.data as { status: string }).status,
    ]);
    expect(statuses).toEqual([
      ["r-env", "denied"],
      ["w-readme", "denied"],
      ["r-src", "ok"],
    ]);
    expect(await readFile(join(workspace, "README.md"), "utf8")).toBe("sum adds\n");

    const missing = await harness([
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--read-path",
      "nope.ts",
      "--session",
      "bad",
      "goal",
    ]);
    expectExit(missing, 64);
    expect(missing.stderr).toContain("nope.ts");
    expect(sessionIds(workspace)).toEqual(["scoped"]);
  });
});
