import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  cliEnv,
  ensureBuilt,
  expectExit,
  jsonSummary,
  ofType,
  readJournal,
  removeTemps,
  runCli,
  tempDir,
  workspaceWith,
} from "./cli.js";
import {
  HELLO_AFTER,
  HELLO_BEFORE,
  HELLO_FILE,
  HELLO_GOAL,
  helloRunArgs,
  helloScript,
} from "./hello-task.js";
import { startMockServer } from "./mock-server.js";

beforeAll(() => ensureBuilt());
afterAll(() => removeTemps());

async function userConfig(models: Record<string, unknown>): Promise<string> {
  const path = join(await tempDir("harness-prov-config-"), "config.json");
  await writeFile(path, JSON.stringify({ models }));
  return path;
}

describe("--profile NAME from the user config", () => {
  it("runs the named profile's provider, model and endpoint", async () => {
    const server = await startMockServer({ dialect: "anthropic", script: helloScript() });
    try {
      const config = await userConfig({
        fast: { provider: "openai-compatible", model: "never-used", base_url: "http://127.0.0.1:9/v1" },
        deep: {
          provider: "anthropic",
          model: "claude-deep",
          base_url: server.baseUrl,
          max_output_tokens: 2048,
        },
      });
      const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
      const result = await runCli(
        helloRunArgs(["--profile", "deep"], workspace, "profiled"),
        cliEnv(await tempDir("harness-prov-home-"), { HARNESS_CONFIG: config }),
      );
      expectExit(result, 0);
      expect(server.failures).toEqual([]);
      expect(jsonSummary(result)).toMatchObject({ status: "verified" });
      expect(await readFile(join(workspace, HELLO_FILE))).toEqual(Buffer.from(HELLO_AFTER));
      // The profile's settings reached the wire.
      expect(server.requests[0]?.body).toMatchObject({ model: "claude-deep", max_tokens: 2048 });
      const [started] = ofType(await readJournal(workspace, "profiled"), "session.started");
      expect(started?.data.provider).toEqual({
        kind: "anthropic",
        model: "claude-deep",
        base_url: server.baseUrl,
      });
    } finally {
      await server.close();
    }
  });

  it("an unknown profile is a usage error (64) that names the available ones", async () => {
    const config = await userConfig({
      fast: { provider: "openai-compatible", model: "m1", base_url: "http://127.0.0.1:9/v1" },
      deep: { provider: "anthropic", model: "m2" },
    });
    const workspace = await workspaceWith({ [HELLO_FILE]: HELLO_BEFORE });
    const result = await runCli(
      ["run", "--profile", "missing", "-w", workspace, HELLO_GOAL],
      cliEnv(await tempDir("harness-prov-home-"), { HARNESS_CONFIG: config }),
    );
    expectExit(result, 64);
    expect(result.stderr).toContain('no model profile "missing"');
    expect(result.stderr).toContain("fast, deep");
    expect(result.stdout).toBe("");
  });
});
