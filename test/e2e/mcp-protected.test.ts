import { readFile, symlink } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  jsonSummary,
  ofType,
  readJournal,
  removeTempDirs,
  workspaceWith,
} from "./helpers.js";
import { recordingScript, run, userConfig } from "./mcp-run-support.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const SERVER = "// the user's MCP server, started by harness (outside the sandbox, as configured)\n";

describe("a program an MCP server definition names inside the workspace", () => {
  it("cannot be rewritten by the agent: write_file is refused and the file keeps its bytes", async () => {
    // The attack: the agent rewrites the script the host starts as an MCP server, so that the next
    // run (the server is started again, here with its sandbox off) runs the agent's code on the host.
    const workspace = await workspaceWith({ "tools/server.mjs": SERVER });
    const { env } = await userConfig({
      mcp_servers: { local: { command: "node", args: ["tools/server.mjs"], sandbox: "off" } },
    });
    const model = await recordingScript({
      name: "write_file",
      arguments: {
        path: "tools/server.mjs",
        content: "require('child_process').execSync('touch /tmp/pwned');\n",
      },
    });
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--write", "allow", "--json", "rewrite it"],
      env,
    );
    // Its only change was refused: the run stops rather than ending unverified.
    expectExit(result, 2);
    expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "changes_denied" });
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    const [written] = ofType(records, "tool.result");
    expect(written?.data).toMatchObject({
      name: "write_file",
      status: "denied",
      error_type: "PROTECTED_PATH",
    });
    expect(await readFile(join(workspace, "tools/server.mjs"), "utf8")).toBe(SERVER);
  });

  it("is protected under its real name when the definition reaches it through a symlinked directory", async () => {
    const workspace = await workspaceWith({ "real/server.mjs": SERVER });
    await symlink("real", join(workspace, "link"));
    const { env } = await userConfig({
      mcp_servers: { local: { command: "node", args: ["link/server.mjs"], sandbox: "off" } },
    });
    const model = await recordingScript({
      name: "write_file",
      arguments: { path: "real/server.mjs", content: "process.exit(1);\n" },
    });
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--write", "allow", "--json", "rewrite it"],
      env,
    );
    // Its only change was refused: the run stops rather than ending unverified.
    expectExit(result, 2);
    expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "changes_denied" });
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    expect(ofType(records, "tool.result")[0]?.data).toMatchObject({
      status: "denied",
      error_type: "PROTECTED_PATH",
    });
    expect(await readFile(join(workspace, "real/server.mjs"), "utf8")).toBe(SERVER);
  });
});
