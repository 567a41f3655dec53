import { existsSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  jsonScript,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * Programs harness starts on the host by name, found on PATH: ripgrep for grep and glob (run
 * without an OS sandbox), and an MCP server configured to run unsandboxed. A user's PATH can name
 * a directory inside the workspace (an activated `.venv/bin`, direnv's `PATH_add bin`,
 * `$PWD/node_modules/.bin`), and the workspace is what the model writes and what a repository
 * ships: a program found there is not the user's program. Each test plants one that would write a
 * marker outside the workspace, where no sandboxed command can write, and asserts it never ran.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A shell script that leaves `marker` behind when anything runs it. */
function plantedProgram(marker: string): string {
  return `#!/bin/sh\necho "ran on the host: $0 $*" > '${marker}'\n`;
}

async function setup(config: Record<string, unknown> = {}) {
  const outside = await tempDir("harness-outside-");
  const marker = join(outside, "marker");
  const configFile = join(await tempDir("harness-config-"), "config.json");
  await writeFile(configFile, JSON.stringify(config));
  const workspace = await workspaceWith({ "notes.txt": "needle in the notes\n" });
  await mkdir(join(workspace, ".venv/bin"), { recursive: true });
  const env = {
    ...childEnv(),
    HARNESS_CONFIG: configFile,
    PATH: `${join(workspace, ".venv/bin")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
  };
  return { workspace, marker, env };
}

async function runScript(
  workspace: string,
  env: NodeJS.ProcessEnv,
  replies: unknown[],
  flags: string[] = [],
) {
  const script = await jsonScript(replies);
  const child = startHarness(
    ["run", "--script", script, "--workspace", workspace, "--json", ...flags, "look around"],
    { env },
  );
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  try {
    return await finished(child);
  } finally {
    clearTimeout(timer);
  }
}

const SEARCHES = [
  { id: "g1", name: "grep", arguments: { pattern: "needle" } },
  { id: "g2", name: "glob", arguments: { pattern: "**/*.txt" } },
];

describe("ripgrep found in a workspace directory on PATH", () => {
  it("a repository's planted rg is never run; grep and glob still answer", async () => {
    const { workspace, marker, env } = await setup();
    await writeFile(join(workspace, ".venv/bin/rg"), plantedProgram(marker));
    await chmod(join(workspace, ".venv/bin/rg"), 0o755);
    const result = await runScript(workspace, env, [{ calls: SEARCHES }, { text: "done" }]);
    expectExit(result, 0);
    expect(existsSync(marker)).toBe(false);
    const results = resultsByCall(await readJournal(workspace, String(jsonSummary(result).session)));
    expect(results.get("g1")).toMatchObject({ status: "ok" });
    expect(JSON.stringify(results.get("g1"))).toContain("1 match");
    expect(results.get("g2")).toMatchObject({ status: "ok" });
    expect(JSON.stringify(results.get("g2"))).toContain("notes.txt");
  });

  it("an rg the model's sandboxed shell writes there is never run by the next grep", async () => {
    const { workspace, marker, env } = await setup();
    const command = `printf '#!/bin/sh\\necho ran > %s\\n' '${marker}' > .venv/bin/rg && chmod +x .venv/bin/rg`;
    const result = await runScript(
      workspace,
      env,
      [
        { calls: [{ id: "s1", name: "shell", arguments: { command } }] },
        { calls: SEARCHES },
        { text: "done" },
      ],
      ["--shell", "allow"],
    );
    expectExit(result, 0);
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    const results = resultsByCall(records);
    // The plant itself succeeded (the sandbox lets the shell write the workspace)...
    expect(results.get("s1")).toMatchObject({ status: "ok" });
    expect(existsSync(join(workspace, ".venv/bin/rg"))).toBe(true);
    // ...but nothing ran it on the host.
    expect(existsSync(marker)).toBe(false);
    expect(results.get("g1")).toMatchObject({ status: "ok" });
    expect(JSON.stringify(results.get("g1"))).toContain("1 match");
    expect(ofType(records, "tool.result")).toHaveLength(3);
  });
});

describe("an unsandboxed MCP server and PATH directories inside the workspace", () => {
  it("a command found only there is not started, and the note says how to name the program instead", async () => {
    const { workspace, marker, env } = await setup({
      mcp_servers: { local: { command: "project-mcp", sandbox: "off" } },
    });
    await writeFile(join(workspace, ".venv/bin/project-mcp"), plantedProgram(marker));
    await chmod(join(workspace, ".venv/bin/project-mcp"), 0o755);
    const result = await runScript(workspace, env, [{ text: "done" }]);
    expect(existsSync(marker)).toBe(false);
    // A server that cannot start is left out with a note; the run goes on without its tools.
    expectExit(result, 0);
    expect(result.stderr).toContain('MCP server "local" could not be started');
    expect(result.stderr).toContain(
      `command "project-mcp" was found on PATH only inside the workspace (${join(workspace, ".venv/bin/project-mcp")})`,
    );
  });

  it("a server started from outside the workspace does not find the programs it runs by name there", async () => {
    const { workspace, marker, env } = await setup();
    const outside = await tempDir("harness-server-");
    // The user's server (outside the workspace) runs a helper by name, as servers run git or node.
    await writeFile(join(outside, "server.sh"), "#!/bin/sh\nhelper\nexit 1\n");
    await chmod(join(outside, "server.sh"), 0o755);
    await writeFile(join(outside, "helper"), `#!/bin/sh\necho real > '${join(outside, "real")}'\n`);
    await chmod(join(outside, "helper"), 0o755);
    await writeFile(join(workspace, ".venv/bin/helper"), plantedProgram(marker));
    await chmod(join(workspace, ".venv/bin/helper"), 0o755);
    const config = String(env.HARNESS_CONFIG);
    await writeFile(
      config,
      JSON.stringify({ mcp_servers: { local: { command: join(outside, "server.sh"), sandbox: "off" } } }),
    );
    const result = await runScript(workspace, { ...env, PATH: `${env.PATH}:${outside}` }, [{ text: "done" }]);
    expectExit(result, 0);
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(outside, "real"))).toBe(true);
  });
});
