import { existsSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive } from "../support/processes.js";
import {
  ensureBuilt,
  expectExit,
  jsonSummary,
  ofType,
  REPO_ROOT,
  readJournal,
  removeTempDirs,
  resultsByCall,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import {
  everything,
  markedServer,
  NODE_MODULES,
  recordingScript,
  run,
  userConfig,
} from "./mcp-run-support.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

/** A workspace proposing `proj` (a marked server) and `everything` (which the user also defines). */
async function proposingWorkspace() {
  const serverDir = await tempDir("harness-mcp-server-");
  const workspace = await workspaceWith({});
  const marked = await markedServer(serverDir, workspace);
  await writeFile(
    join(workspace, "harness.config.json"),
    JSON.stringify({ mcp_servers: { proj: { command: marked.command }, everything: { command: "evil" } } }),
  );
  return { workspace, marked };
}

describe("harness mcp list / test", () => {
  it("list shows the user's servers and the project's proposals without starting any (readable and --json)", async () => {
    const { workspace, marked } = await proposingWorkspace();
    const { env } = await userConfig({
      mcp_servers: { everything: everything({ required: true, trusted: true }) },
    });
    const text = await run(["mcp", "list", "--workspace", workspace], env);
    expectExit(text, 0);
    expect(text.stdout).toMatch(/^everything\s+user\s+starts \(stdio, required, trusted\)$/m);
    expect(text.stdout).toMatch(
      /^proj\s+project\s+NOT approved, does not start \(stdio, optional, untrusted\)$/m,
    );
    expect(text.stdout).toMatch(/^everything\s+project\s+ignored: your user config defines it$/m);
    expect(text.stdout).toContain(`harness mcp approve NAME --workspace ${workspace}`);

    const json = await run(["mcp", "list", "--workspace", workspace, "--json"], env);
    expectExit(json, 0);
    const listed = JSON.parse(json.stdout);
    expect(listed.servers).toEqual([
      expect.objectContaining({
        name: "everything",
        source: "user",
        starts: true,
        approved: null,
        required: true,
        trusted: true,
      }),
      expect.objectContaining({
        name: "proj",
        source: "project",
        starts: false,
        approved: false,
        required: false,
      }),
    ]);
    expect(listed.servers[1].digest).toMatch(/^[0-9a-f]{64}$/);
    expect(listed.shadowed).toEqual([{ name: "everything", source: "project", shadowed: true }]);
    expect(existsSync(marked.marker)).toBe(false);

    // A project cannot approve its own proposal: approvals are read from the user config only.
    const digest = listed.servers[1].digest as string;
    await writeFile(
      join(workspace, "harness.config.json"),
      JSON.stringify({ mcp_servers: { proj: { command: marked.command } }, mcp_approvals: { proj: digest } }),
    );
    const selfApproved = await run(["mcp", "list", "--workspace", workspace, "--json"], env);
    expectExit(selfApproved, 0);
    expect(JSON.parse(selfApproved.stdout).servers[1]).toMatchObject({
      name: "proj",
      approved: false,
      starts: false,
    });
  });

  it("test starts a server, lists its tools as the model sees them with their effect classes, and stops it", async () => {
    const serverDir = await tempDir("harness-mcp-server-");
    const marked = await markedServer(serverDir);
    const { env } = await userConfig({
      mcp_servers: { everything: { command: marked.command, sandbox: "off" } },
    });
    const text = await run(["mcp", "test", "everything"], env);
    expectExit(text, 0);
    expect(text.stderr).toMatch(/MCP server everything: ready/);
    expect(text.stdout).toMatch(/^everything: \d+ tools$/m);
    expect(text.stdout).toMatch(/^ {2}mcp__everything__echo\s+external_side_effect$/m);

    const json = await run(["mcp", "test", "everything", "--json"], env);
    expectExit(json, 0);
    const tested = JSON.parse(json.stdout);
    expect(tested.server).toBe("everything");
    expect(tested.tools).toContainEqual({
      name: "mcp__everything__echo",
      raw_name: "echo",
      effect: "external_side_effect",
      idempotency: "non_idempotent",
    });
    // Stopped: the server process is gone once the command has exited.
    const pid = Number(readFileSync(marked.pidFile, "utf8"));
    expect(alive(pid)).toBe(false);
  });

  it("test reports a server that cannot start (exit 2, its stderr escaped), and refuses an unapproved proposal", async () => {
    const { workspace, marked } = await proposingWorkspace();
    const { env } = await userConfig({
      mcp_servers: {
        broken: {
          command: process.execPath,
          args: ["-e", "process.stderr.write('\\u001b[31mno database'); process.exit(3)"],
          sandbox: "off",
        },
      },
    });
    const broken = await run(["mcp", "test", "broken", "--workspace", workspace], env);
    expectExit(broken, 2);
    expect(broken.stderr).toContain('MCP server "broken"');
    expect(broken.stderr).toContain("no database");
    expect(broken.stderr).not.toContain("\u001b");

    const proposal = await run(["mcp", "test", "proj", "--workspace", workspace], env);
    expectExit(proposal, 64);
    expect(proposal.stderr).toContain(`harness mcp approve proj --workspace ${workspace}`);
    expect(existsSync(marked.marker)).toBe(false);

    const unknown = await run(["mcp", "test", "nope", "--workspace", workspace], env);
    expectExit(unknown, 64);
    expect(unknown.stderr).toContain('no MCP server "nope" is configured');
  });

  it("a tool whose schema does not compile is left out with a note; a hostile tool name is escaped", async () => {
    const fixtures = join(REPO_ROOT, "test/e2e/fixtures");
    const { env } = await userConfig({
      mcp_servers: {
        odd: {
          command: process.execPath,
          args: [join(fixtures, "mcp-odd-server.mjs")],
          read_paths: [fixtures, NODE_MODULES],
        },
      },
    });
    const tested = await run(["mcp", "test", "odd"], env);
    expectExit(tested, 0);
    expect(tested.stdout).toMatch(/^ {2}mcp__odd__fine\s+external_side_effect$/m);
    expect(tested.stdout).toMatch(/^ {2}not offered: "broken": the input schema does not compile/m);
    expect(tested.stdout).toMatch(
      /^ {2}mcp__odd____31mred__0m_[0-9a-f]{8}\s+external_side_effect \(server name ".+"\)$/m,
    );
    expect(tested.stdout).not.toMatch(/[\u001b\u0007]/);

    const workspace = await workspaceWith({});
    const model = await recordingScript({ name: "mcp__odd__fine", arguments: {} });
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--allow", "mcp__odd__*", "--json", "go"],
      env,
    );
    expectExit(result, 0);
    expect(result.stderr).toContain('harness: note: MCP tool "broken" of server "odd" is not offered');
    expect(result.stderr).not.toMatch(/[\u001b\u0007]/);
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    const offered = (ofType(records, "session.started")[0]!.data.tools as { name: string }[]).map(
      (t) => t.name,
    );
    expect(offered.filter((name) => name.startsWith("mcp__odd__")).sort()).toEqual([
      expect.stringMatching(/^mcp__odd____31mred__0m_[0-9a-f]{8}$/),
      "mcp__odd__fine",
    ]);
    expect(resultsByCall(records).get("c1")).toMatchObject({ status: "ok", content: "called fine" });
  });

  it("approve refuses what the project does not propose, and keeps a malformed user config untouched", async () => {
    const { workspace } = await proposingWorkspace();
    const { file, env } = await userConfig({});
    const missing = await run(["mcp", "approve", "nothing", "--workspace", workspace], env);
    expectExit(missing, 64);
    expect(missing.stderr).toContain('proposes no MCP server "nothing"');
    await writeFile(file, "{ not json");
    const bad = await run(["mcp", "approve", "proj", "--workspace", workspace], env);
    expectExit(bad, 64);
    expect(readFileSync(file, "utf8")).toBe("{ not json");
  });

  it("--help describes list, test and approve", async () => {
    const help = await run(["mcp", "--help"], process.env);
    expectExit(help, 0);
    for (const usage of [
      "harness mcp list [--workspace DIR] [--json]",
      "harness mcp test NAME",
      "harness mcp approve NAME",
    ])
      expect(help.stdout).toContain(usage);
  });

  it("each subcommand's --help is its own: list's does not describe serve", async () => {
    const list = await run(["mcp", "list", "--help"], process.env);
    expectExit(list, 0);
    expect(list.stdout.startsWith("harness mcp list [--workspace DIR] [--json]")).toBe(true);
    expect(list.stdout).not.toContain("harness mcp serve");
    const approve = await run(["mcp", "approve", "-h"], process.env);
    expectExit(approve, 0);
    expect(approve.stdout.startsWith("harness mcp approve NAME")).toBe(true);
  });
});
