import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { everything } from "./mcp-run-support.js";

/*
 * A project plugin's hooks and MCP servers through the built CLI: nothing of them is loaded until
 * the user approves the plugin by digest; once approved its server is offered (sandboxed as a
 * project's proposal) and its hook runs in the hook sandbox (read-only: it cannot write the
 * workspace); once the plugin changes, neither is loaded again until approved again.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const MANIFEST = {
  name: "kit",
  description: "A kit with a server and a hook.",
  mcpServers: { everything: everything() },
  hooks: { after_project: [{ kind: "notify", command: "printf hooked > hook-made.txt" }] },
};

describe("a project plugin's hooks and MCP servers", () => {
  let workspace: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    const configDir = await tempDir("harness-config-");
    const configFile = join(configDir, "config.json");
    await writeFile(configFile, "{}\n");
    env = { ...childEnv(), HARNESS_CONFIG: configFile };
    workspace = await workspaceWith({
      ".agents/plugins/kit/plugin.json": JSON.stringify(MANIFEST),
      "notes.txt": "draft\n",
    });
  });

  const harness = (args: string[]) => finished(startHarness(args, { env }));
  const run = async (session: string) => {
    const script = await jsonScript([
      { calls: [{ id: "c1", name: "mcp__everything__echo", arguments: { message: "hi" } }] },
      { text: "done" },
    ]);
    return harness([
      "run",
      "--script",
      script,
      "--workspace",
      workspace,
      "--session",
      session,
      "--allow",
      "mcp__everything__*",
      "--json",
      "go",
    ]);
  };
  const echoResult = async (session: string) => {
    const records = await readJournal(workspace, session);
    return { records, result: resultsByCall(records).get("c1") };
  };

  it("loads neither until the plugin is approved", { timeout: 120_000 }, async () => {
    const result = await run("unapproved");
    expect(result.stderr).toContain("harness plugins approve kit");
    const { records, result: echo } = await echoResult("unapproved");
    expect(echo?.status).not.toBe("ok");
    expect(JSON.stringify(echo)).not.toContain("Echo: hi");
    expect(ofType(records, "process.spawned").filter((r) => r.data.purpose === "hook")).toEqual([]);
    expect(ofType(records, "hook.decided")).toEqual([]);
  });

  it("approved: its server is offered and its hook runs sandboxed", { timeout: 120_000 }, async () => {
    expectExit(await harness(["plugins", "approve", "kit", "--workspace", workspace]), 0);
    const result = await run("approved");
    expectExit(result, 0);
    const { records, result: echo } = await echoResult("approved");
    expect(echo).toMatchObject({ status: "ok", content: "Echo: hi", data: { server: "everything" } });
    const hook = ofType(records, "process.spawned").filter((r) => r.data.purpose === "hook");
    expect(hook.map((r) => [r.data.sandboxed, r.data.sandbox_profile])).toEqual([[true, "read-only"]]);
    // Read-only: the hook ran but could not write the workspace.
    expect(ofType(records, "hook.decided").map((r) => [r.data.hook, r.data.decision])).toEqual([
      ["plugin:kit:after_project[0]", "error"],
    ]);
    expect(existsSync(join(workspace, "hook-made.txt"))).toBe(false);
  });

  it("changed since approved: neither is loaded again", { timeout: 120_000 }, async () => {
    await writeFile(
      join(workspace, ".agents/plugins/kit/plugin.json"),
      JSON.stringify({ ...MANIFEST, description: "changed" }),
    );
    const result = await run("changed");
    expect(result.stderr).toContain("changed since you approved it");
    const { records, result: echo } = await echoResult("changed");
    expect(echo?.status).not.toBe("ok");
    expect(JSON.stringify(echo)).not.toContain("Echo: hi");
    expect(ofType(records, "process.spawned").filter((r) => r.data.purpose === "hook")).toEqual([]);
    expect(ofType(records, "hook.decided")).toEqual([]);
  });
});
