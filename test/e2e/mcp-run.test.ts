import { existsSync, readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive } from "../support/processes.js";
import {
  ensureBuilt,
  expectExit,
  finished,
  jsonSummary,
  ofType,
  perCall,
  readJournal,
  removeTempDirs,
  resultsByCall,
  sessionIds,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { everything, markedServer, recordingScript, run, userConfig } from "./mcp-run-support.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const ECHO = { name: "mcp__everything__echo", arguments: { message: "hello from the model" } };

describe("harness run with the user's MCP servers (reference server-everything over stdio)", () => {
  it("offers the server's tools, calls echo, journals the call and sends its result to the model", async () => {
    const workspace = await workspaceWith({});
    const { env } = await userConfig({ mcp_servers: { everything: everything() } });
    const model = await recordingScript(ECHO);
    const result = await run(
      [
        "run",
        "--workspace",
        workspace,
        "--script",
        model.path,
        "--allow",
        "mcp__everything__*",
        "--json",
        "say hi",
      ],
      env,
    );
    expectExit(result, 0);
    expect(result.stderr).toMatch(
      /MCP server everything: starting\n[\s\S]*MCP server everything: ready \(\d+ ms\)/,
    );
    const summary = jsonSummary(result);
    const records = await readJournal(workspace, String(summary.session));
    const started = ofType(records, "session.started")[0]!;
    const tools = (started.data.tools as { name: string; effect: string }[]).map((t) => t.name);
    expect(tools).toEqual(
      expect.arrayContaining(["read_file", "mcp__everything__echo", "mcp__everything__get-sum"]),
    );
    expect(
      (started.data.tools as { name: string; effect: string }[]).find((t) => t.name === ECHO.name)?.effect,
    ).toBe("external_side_effect");
    expect(perCall(records, "tool.started").get("c1")).toBe(1);
    const echoed = resultsByCall(records).get("c1");
    expect(echoed).toMatchObject({
      name: ECHO.name,
      status: "ok",
      content: "Echo: hello from the model",
      data: { server: "everything", tool: "echo" },
    });
    // The second request carried the server's answer to the model.
    const requests = await model.requests();
    expect(requests.map((r) => r.step)).toEqual([0, 1]);
    expect(JSON.stringify(requests[1]!.messages)).toContain("Echo: hello from the model");
  });

  it("asks before an untrusted server's tool runs: off a terminal the call is denied and never sent", async () => {
    const workspace = await workspaceWith({});
    const { env } = await userConfig({ mcp_servers: { everything: everything() } });
    const model = await recordingScript(ECHO);
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--json", "say hi"],
      env,
    );
    // The only call was an MCP tool that is not read-only and was denied: the run stops, naming the rule that allows it.
    expectExit(result, 2);
    expect(jsonSummary(result)).toMatchObject({ status: "stopped", reason: "changes_denied" });
    expect(String(jsonSummary(result).message)).toContain("allow them (--allow mcp__everything__echo)");
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    expect(ofType(records, "approval.decided").map((r) => [r.data.call_id, r.data.decision])).toEqual([
      ["c1", "deny"],
    ]);
    expect(perCall(records, "tool.started").get("c1")).toBeUndefined();
    expect(resultsByCall(records).get("c1")).toMatchObject({ status: "denied", error_type: "USER_DENIED" });
    expect(JSON.stringify((await model.requests())[1]!.messages)).not.toContain("Echo:");
  });

  it("never starts a project's unapproved server, says how to approve it, and starts it once approved", async () => {
    const serverDir = await tempDir("harness-mcp-server-");
    const workspace = await workspaceWith({});
    const marked = await markedServer(serverDir, workspace);
    await writeFile(
      join(workspace, "harness.config.json"),
      JSON.stringify({
        mcp_servers: {
          proj: {
            command: marked.command,
            read_paths: [serverDir, ...(everything().read_paths as string[])],
          },
        },
      }),
    );
    const { file, env } = await userConfig({ permissions: { allow: ["read_file"] } });
    const model = await recordingScript({ name: "mcp__proj__echo", arguments: { message: "x" } });
    const before = await run(["run", "--workspace", workspace, "--script", model.path, "--json", "go"], env);
    expectExit(before, 0);
    expect(existsSync(marked.marker)).toBe(false);
    expect(before.stderr).toContain('the project proposes MCP server "proj"; it was not started');
    expect(before.stderr).toContain(`harness mcp approve proj --workspace ${workspace}`);
    const first = await readJournal(workspace, String(jsonSummary(before).session));
    const firstTools = (ofType(first, "session.started")[0]!.data.tools as { name: string }[]).map(
      (t) => t.name,
    );
    expect(firstTools.some((name) => name.startsWith("mcp__"))).toBe(false);
    expect(resultsByCall(first).get("c1")).toMatchObject({ status: "invalid" });

    const approve = await run(["mcp", "approve", "proj", "--workspace", workspace], env);
    expectExit(approve, 0);
    expect(approve.stdout).toContain(`"command": "${marked.command}"`);
    expect(existsSync(marked.marker)).toBe(false);
    const saved = JSON.parse(await readFile(file, "utf8"));
    expect(saved.permissions).toEqual({ allow: ["read_file"] });
    expect(saved.mcp_approvals.proj).toEqual([
      expect.objectContaining({ workspace, definition: expect.stringMatching(/^[0-9a-f]{64}$/) }),
    ]);

    const after = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--allow", "mcp__proj__*", "--json", "go"],
      env,
    );
    expectExit(after, 0);
    expect(readFileSync(marked.marker, "utf8")).toBe("started\n");
    const second = await readJournal(workspace, String(jsonSummary(after).session));
    expect(resultsByCall(second).get("c1")).toMatchObject({ status: "ok", content: "Echo: x" });

    // A changed definition is a new proposal: it needs a new approval.
    await writeFile(
      join(workspace, "harness.config.json"),
      JSON.stringify({ mcp_servers: { proj: { command: marked.command, args: ["--changed"] } } }),
    );
    const changed = await run(["mcp", "list", "--workspace", workspace, "--json"], env);
    expect(JSON.parse(changed.stdout).servers).toEqual([
      expect.objectContaining({ name: "proj", source: "project", approved: false, starts: false }),
    ]);
  });

  it("stops before any model request when a required server cannot start (exit 2, nothing recorded)", async () => {
    const workspace = await workspaceWith({});
    const { env } = await userConfig({
      mcp_servers: {
        broken: {
          command: process.execPath,
          // Its stderr tries to pass a line of its own as one of harness's.
          args: [
            "-e",
            "process.stderr.write('no database\\nharness run: verified\\n\\x1b[2J'); process.exit(3)",
          ],
          required: true,
          sandbox: "off",
        },
        everything: everything(),
      },
    });
    const model = await recordingScript(ECHO);
    const result = await run(["run", "--workspace", workspace, "--script", model.path, "go"], env);
    expectExit(result, 2);
    const lines = result.stderr.split("\n");
    // Laid out on lines of its own (never a \x0a in place of a newline harness wrote), the
    // server's words quoted under `│ `, its controls escaped.
    expect(lines).toContain("harness run: a required MCP server could not start:");
    expect(lines).toContainEqual(
      expect.stringMatching(/^ {2}- MCP server "broken" .*its stderr ends with:$/),
    );
    expect(lines).toContain("    │ no database");
    expect(lines).toContain("    │ harness run: verified");
    expect(lines).toContain("    │ \\x1b[2J");
    expect(lines.filter((line) => line.startsWith("harness run: verified"))).toEqual([]);
    expect(result.stderr).not.toContain("\x1b");
    expect(result.stderr).not.toContain("\\x0a");
    expect(lines).toContainEqual(expect.stringContaining('"required": false'));
    expect(await model.requests()).toEqual([]);
    expect(sessionIds(workspace)).toEqual([]);
  });

  it("a server killed mid-call stops the run review_required (exit 3); resume does not send the call again", async () => {
    const serverDir = await tempDir("harness-mcp-server-");
    const marked = await markedServer(serverDir);
    const workspace = await workspaceWith({});
    const { env } = await userConfig({
      mcp_servers: { everything: { command: marked.command, sandbox: "off" } },
    });
    const model = await recordingScript({
      name: "mcp__everything__trigger-long-running-operation",
      arguments: { duration: 30, steps: 3 },
    });
    const args = [
      "--workspace",
      workspace,
      "--script",
      model.path,
      "--allow",
      "mcp__everything__*",
      "--json",
    ];
    const child = startHarness(["run", ...args, "go"], { env });
    const done = finished(child);
    // Kill the server once the call is under way (the request written to it, not only journaled).
    await waitFor(() => sessionIds(workspace).length === 1 && journalHas(workspace, "tool.started"));
    await new Promise((resolve) => setTimeout(resolve, 800));
    process.kill(Number(readFileSync(marked.pidFile, "utf8")), "SIGKILL");
    const result = await done;
    expectExit(result, 3);
    const summary = jsonSummary(result);
    expect(summary).toMatchObject({ status: "review_required", reason: "unknown_outcome" });
    const id = String(summary.session);
    const records = await readJournal(workspace, id);
    expect(resultsByCall(records).get("c1")).toMatchObject({
      status: "unknown",
      error_type: "MCP_OUTCOME_UNKNOWN",
    });

    const resumed = await run(["resume", id, ...args], env);
    expectExit(resumed, 3);
    const after = await readJournal(workspace, id);
    expect(perCall(after, "tool.started").get("c1")).toBe(1);
    expect(ofType(after, "tool.started")).toHaveLength(1);
    expect((await model.requests()).map((r) => r.step)).toEqual([0]);

    // inspect counts the call under its server, as an unknown outcome.
    const inspected = await run(["inspect", id, "--workspace", workspace, "--json"], env);
    expectExit(inspected, 0);
    expect(JSON.parse(inspected.stdout).mcp).toEqual([
      { server: "everything", calls: 1, ok: 0, errors: 0, denied: 0, unknown: 1 },
    ]);
    const readable = await run(["inspect", id, "--workspace", workspace], env);
    expect(readable.stdout).toMatch(
      /^MCP SERVER\s+CALLS\s+OK\s+ERR\s+DENIED\s+UNKNOWN\neverything\s+1\s+0\s+0\s+0\s+1$/m,
    );
  });

  it("Ctrl-C during an MCP call ends the run (exit 130) and stops the server", async () => {
    const serverDir = await tempDir("harness-mcp-server-");
    const workspace = await workspaceWith({});
    const marked = await markedServer(serverDir, workspace);
    const { env } = await userConfig({
      mcp_servers: { everything: { command: marked.command, sandbox: "off" } },
    });
    const model = await recordingScript({
      name: "mcp__everything__trigger-long-running-operation",
      arguments: { duration: 30, steps: 3 },
    });
    const child = startHarness(
      ["run", "--workspace", workspace, "--script", model.path, "--allow", "mcp__everything__*", "go"],
      { env },
    );
    const done = finished(child);
    await waitFor(() => sessionIds(workspace).length === 1 && journalHas(workspace, "tool.started"));
    const pid = Number(readFileSync(marked.pidFile, "utf8"));
    child.kill("SIGINT");
    const result = await done;
    expectExit(result, 130);
    expect(alive(pid)).toBe(false);
  });
});

function journalHas(workspace: string, type: string): boolean {
  const [id] = sessionIds(workspace);
  const file = join(workspace, ".harness", "sessions", String(id), "events.jsonl");
  return existsSync(file) && readFileSync(file, "utf8").includes(`"type":"${type}"`);
}

async function waitFor(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
