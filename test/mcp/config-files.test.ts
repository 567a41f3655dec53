import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config/errors.js";
import { loadConfig } from "../../src/config/load.js";
import { mcpServerSettings } from "../../src/config/sections.js";
import { currentBinding, judgeApproval } from "../../src/mcp/approval.js";
import { selectServers } from "../../src/mcp/selection.js";

let root: string;
let home: string;
let workspace: string;
const USER_LABEL = "user config (~/.config/harness/config.json)";

async function writeJson(file: string, value: unknown): Promise<void> {
  await mkdir(join(file, ".."), { recursive: true });
  await writeFile(file, JSON.stringify(value));
}
const userFile = () => join(home, ".config", "harness", "config.json");
const projectFile = () => join(workspace, "harness.config.json");
const load = () => loadConfig({ workspaceRoot: workspace, env: {}, homedir: home });

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "harness-mcp-config-"));
  home = join(root, "home");
  workspace = join(root, "ws");
  await mkdir(workspace, { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("mcp_servers in config files", () => {
  it("reads the user's servers and a project's proposals, which do not start until approved", async () => {
    await writeJson(userFile(), {
      mcp_servers: { github: { command: "github-mcp", pass_env: ["GITHUB_TOKEN"] } },
    });
    await writeJson(projectFile(), { mcp_servers: { db: { command: "db-mcp", args: ["--ro"] } } });
    const settings = mcpServerSettings(await load());
    expect(Object.keys(settings.user)).toEqual(["github"]);
    expect(settings.proposed.db).toMatchObject({
      command: "db-mcp",
      args: ["--ro"],
      sandbox: "workspace-write",
    });
    const unapproved = selectServers(settings.user, settings.proposed, (_name, definition) =>
      judgeApproval(undefined, currentBinding(definition, "/nonexistent-workspace")),
    );
    expect(unapproved.start.map((server) => server.name)).toEqual(["github"]);
    expect(unapproved.unapproved.map((server) => server.name)).toEqual(["db"]);
    const recorded = [currentBinding(settings.proposed.db!, "/nonexistent-workspace")];
    const approved = selectServers(settings.user, settings.proposed, (name, definition) =>
      judgeApproval(
        name === "db" ? recorded : undefined,
        currentBinding(definition, "/nonexistent-workspace"),
      ),
    );
    expect(approved.start.map((server) => server.name)).toEqual(["github", "db"]);
  });

  it("refuses a bad definition as a config error naming the file, the server and the field", async () => {
    await writeJson(userFile(), {
      mcp_servers: { github: { command: "github-mcp", tool_timeout_ms: "slow" } },
    });
    const error = await load()
      .then(mcpServerSettings)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).file).toBe(USER_LABEL);
    expect((error as ConfigError).problem).toMatch(/^mcp_servers\.github\.tool_timeout_ms: /);
  });

  it("has no servers when no config defines any", async () => {
    expect(mcpServerSettings(await load())).toEqual({ user: {}, proposed: {} });
  });
});
