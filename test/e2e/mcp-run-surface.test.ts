import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
import { everything, NODE_MODULES, recordingScript, run, userConfig } from "./mcp-run-support.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const FIXTURES = join(REPO_ROOT, "test/mcp/fixtures");

describe("an MCP server whose tool list changes during a run", () => {
  it("is listed again at the next step boundary: tools.changed is journaled and the new tool is offered and callable", async () => {
    const workspace = await workspaceWith({});
    const { env } = await userConfig({
      mcp_servers: {
        toy: {
          command: process.execPath,
          args: [join(FIXTURES, "toy-server.mjs")],
          env: { TOY_LOG: join(workspace, "toy.log") },
          read_paths: [FIXTURES, NODE_MODULES],
          // Trusted: an untrusted server's first result would make its next call in the turn ask a person.
          trusted: true,
        },
      },
    });
    const dir = await tempDir("harness-mcp-script-");
    const script = join(dir, "model.mjs");
    await writeFile(
      script,
      `export default function model(messages, step) {
  if (step === 0) return { text: "adding", calls: [{ id: "add", name: "mcp__toy__add_tool", arguments: {} }] };
  if (step === 1) return { text: "using", calls: [{ id: "use", name: "mcp__toy__extra_1", arguments: {} }] };
  return { text: "done" };
}
`,
    );
    const result = await run(
      ["run", "--workspace", workspace, "--script", script, "--allow", "mcp__toy__*", "--json", "grow"],
      env,
    );
    expectExit(result, 0);
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    const first = ofType(records, "session.started")[0]!.data.tools as { name: string }[];
    expect(first.map((t) => t.name)).not.toContain("mcp__toy__extra_1");
    const changes = ofType(records, "tools.changed");
    expect(changes).toHaveLength(1);
    expect(changes[0]!.data).toMatchObject({ reason: "refresh", added: ["mcp__toy__extra_1"], removed: [] });
    // Taken up between the two steps: after the first call's result, before the second request.
    const seqOf = (type: string, callId: string) =>
      records.find((r) => r.type === type && r.data.call_id === callId)!.seq;
    expect(changes[0]!.seq).toBeGreaterThan(seqOf("tool.result", "add"));
    expect(resultsByCall(records).get("use")).toMatchObject({ status: "ok", content: "extra_1" });
    expect(readFileSync(join(workspace, "toy.log"), "utf8")).toContain("call add_tool extra_1");
  });

  it("reports the tools a refresh made unusable: journaled in tools.changed with why, and said on stderr", async () => {
    const workspace = await workspaceWith({});
    const { env } = await userConfig({
      mcp_servers: {
        breaking: {
          command: process.execPath,
          args: [join(REPO_ROOT, "test/e2e/fixtures/mcp-breaking-server.mjs")],
          read_paths: [join(REPO_ROOT, "test/e2e/fixtures"), NODE_MODULES],
        },
      },
    });
    const model = await recordingScript({ name: "mcp__breaking__break", arguments: {} });
    const result = await run(
      ["run", "--workspace", workspace, "--script", model.path, "--allow", "mcp__breaking__*", "--json", "x"],
      env,
    );
    expectExit(result, 0);
    const records = await readJournal(workspace, String(jsonSummary(result).session));
    const first = (ofType(records, "session.started")[0]!.data.tools as { name: string }[]).map(
      (t) => t.name,
    );
    expect(first).toEqual(expect.arrayContaining(["mcp__breaking__victim", "mcp__breaking__gone"]));
    const changes = ofType(records, "tools.changed");
    expect(changes).toHaveLength(1);
    expect(changes[0]!.data).toMatchObject({
      reason: "refresh",
      added: [],
      removed: ["mcp__breaking__gone", "mcp__breaking__victim"],
      unavailable: [{ server: "breaking", tool: "victim", reason: expect.stringMatching(/schema/) }],
    });
    expect(result.stderr).toContain(
      "harness: the tools changed before step 2: removed mcp__breaking__gone, mcp__breaking__victim",
    );
    expect(result.stderr).toMatch(/harness: MCP tool "victim" of server "breaking" cannot be used: .*schema/);
  });

  it("--tools filters MCP tools: readonly offers an untrusted server's none, a list offers the names and patterns it holds", async () => {
    const workspace = await workspaceWith({});
    const { env } = await userConfig({ mcp_servers: { everything: everything() } });
    const dir = await tempDir("harness-mcp-script-");
    const script = join(dir, "model.mjs");
    await writeFile(script, `export default function model() { return { text: "done" }; }\n`);
    const offered = async (tools: string) => {
      const result = await run(
        ["run", "--workspace", workspace, "--script", script, "--tools", tools, "--json", "look"],
        env,
      );
      expectExit(result, 0);
      const records = await readJournal(workspace, String(jsonSummary(result).session));
      return (ofType(records, "session.started")[0]!.data.tools as { name: string }[]).map((t) => t.name);
    };
    const all = await offered("coding");
    expect(all).toEqual(
      expect.arrayContaining(["shell", "mcp__everything__echo", "mcp__everything__get-sum"]),
    );
    // A profile brings the agent tool; never an untrusted server's tools.
    expect(await offered("readonly")).toEqual([
      "read_file",
      "glob",
      "grep",
      "read_artifact",
      "batch",
      "web_fetch",
      "agent",
    ]);
    expect(await offered("read_file,mcp__everything__echo,mcp__everything__get-*")).toEqual([
      "read_file",
      "mcp__everything__echo",
      ...all.filter((name) => name.startsWith("mcp__everything__get-")),
    ]);
  });

  it("is part of the session on resume: the same servers continue it; a server gone is refused unless --accept-tool-changes", async () => {
    const workspace = await workspaceWith({});
    const withServer = await userConfig({ mcp_servers: { everything: everything() } });
    const without = await userConfig({});
    const model = await recordingScript({ name: "mcp__everything__echo", arguments: { message: "again" } });
    const args = [
      "--workspace",
      workspace,
      "--script",
      model.path,
      "--allow",
      "mcp__everything__*",
      "--json",
    ];
    const first = await run(
      ["run", ...args, "--max-model-requests", "1", "--session", "s1", "echo"],
      withServer.env,
    );
    expectExit(first, 2);
    const resumed = await run(["resume", "s1", ...args], withServer.env);
    expectExit(resumed, 0);
    expect(ofType(await readJournal(workspace, "s1"), "tools.changed")).toEqual([]);

    const second = await run(
      ["run", ...args, "--max-model-requests", "1", "--session", "s2", "echo"],
      withServer.env,
    );
    expectExit(second, 2);
    const refused = await run(["resume", "s2", ...args], without.env);
    expectExit(refused, 64);
    expect(refused.stderr).toContain("--accept-tool-changes");
    const accepted = await run(["resume", "s2", ...args, "--accept-tool-changes"], without.env);
    expectExit(accepted, 0);
    const changes = ofType(await readJournal(workspace, "s2"), "tools.changed");
    expect(changes).toHaveLength(1);
    expect(changes[0]!.data).toMatchObject({ reason: "resume", added: [] });
    expect(changes[0]!.data.removed).toContain("mcp__everything__echo");
  });
});
