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

describe("agent_profile in the user config", () => {
  it("gives sub-agents that profile's model (the wire sees it), under the same boundaries", async () => {
    const server = await startMockServer({
      dialect: "chat",
      script: () => ({ kind: "text", text: "the child answered" }),
    });
    try {
      const config = join(await tempDir("harness-prov-config-"), "config.json");
      await writeFile(
        config,
        JSON.stringify({
          models: { small: { provider: "openai-compatible", model: "small-1", base_url: server.baseUrl } },
          agent_profile: "small",
        }),
      );
      const script = join(await tempDir("harness-prov-script-"), "parent.json");
      await writeFile(
        script,
        JSON.stringify({
          replies: [
            {
              text: "",
              calls: [{ id: "a1", name: "agent", arguments: { task: "answer", label: "helper" } }],
            },
            { text: "parent done" },
          ],
        }),
      );
      const workspace = await workspaceWith({ "a.txt": "a\n" });
      const home = await tempDir("harness-prov-home-");
      const result = await runCli(
        [
          "run",
          "--script",
          script,
          "-w",
          workspace,
          "--session",
          "prof",
          "--json",
          "--deny",
          "shell(curl*)",
          "go",
        ],
        cliEnv(home, { HARNESS_CONFIG: config, HARNESS_AGENTS_DIR: join(home, "copies") }),
      );
      expectExit(result, 0);
      expect(server.failures).toEqual([]);
      // The child's one request went to the profile's model, not to the parent's script.
      expect(server.requests).toHaveLength(1);
      expect(server.requests[0]?.body).toMatchObject({ model: "small-1" });
      const child = await readJournal(workspace, "prof/helper");
      const [started] = ofType(child, "session.started");
      expect(started?.data.provider).toMatchObject({ kind: "openai-compatible", model: "small-1" });
      // Its policy still carries the parent's rules.
      expect(started?.data.options).toMatchObject({ deny: ["shell(curl*)"], profile: "small" });
      const [finished] = ofType(await readJournal(workspace, "prof"), "agent.finished");
      expect(finished?.data).toMatchObject({ outcome: "unverified" });
    } finally {
      await server.close();
    }
  });
});
