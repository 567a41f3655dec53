import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ensureBuilt,
  expectExit,
  type JournalLine,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  tempDir,
  workspaceWith,
} from "./helpers.js";
import { everything, run, userConfig } from "./mcp-run-support.js";

/*
 * A sub-agent and its parent's MCP servers, through the built CLI with the reference server
 * (server-everything, trusted: its annotations give echo the read-only effect and
 * toggle-simulated-logging a writing one). The child uses the parent's started server: its calls
 * are in its own journal, and only what its grant holds is offered to it.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const ECHO = "mcp__everything__echo";
const TOGGLE = "mcp__everything__toggle-simulated-logging";

interface Script {
  replies: unknown[];
  agents?: Record<string, Script>;
}

async function delegate(
  agentArgs: Record<string, unknown>,
  child: Script,
  flags: string[] = [],
): Promise<{
  workspace: string;
  id: string;
  env: NodeJS.ProcessEnv;
  parent: JournalLine[];
  child: JournalLine[];
}> {
  const workspace = await workspaceWith({ "notes.txt": "one\n" });
  const { env } = await userConfig({ mcp_servers: { everything: everything({ trusted: true }) } });
  const environment = { ...env, HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") };
  const script: Script = {
    replies: [
      { text: "", calls: [{ id: "a1", name: "agent", arguments: { task: "use the server", ...agentArgs } }] },
      { text: "ok" },
    ],
    agents: { [String(agentArgs.label)]: child },
  };
  const file = join(await tempDir("harness-agents-mcp-"), "script.json");
  await writeFile(file, JSON.stringify(script));
  const id = `s${Math.random().toString(16).slice(2, 10)}`;
  const result = await run(
    ["run", "--script", file, "--workspace", workspace, "--session", id, "--json", ...flags, "delegate"],
    environment,
  );
  expectExit(result, 0);
  return {
    workspace,
    id,
    env: environment,
    parent: await readJournal(workspace, id),
    child: await readJournal(workspace, `${id}/${String(agentArgs.label)}`),
  };
}

const mcpCalls = (journal: JournalLine[]) =>
  ofType(journal, "tool.started")
    .map((r) => String(r.data.name))
    .filter((name) => name.startsWith("mcp__"));

describe("a sub-agent and its parent's MCP servers", () => {
  it("calls a read-only MCP tool of the parent's server (journaled in its own journal); a writing one is not granted by default and is refused", async () => {
    const { workspace, id, env, parent, child } = await delegate(
      { label: "reader" },
      {
        replies: [
          { text: "", calls: [{ id: "c1", name: ECHO, arguments: { message: "from the child" } }] },
          { text: "", calls: [{ id: "c2", name: TOGGLE, arguments: {} }] },
          { text: "read it" },
        ],
      },
    );
    // The parent's server started once (the parent's journal records its spawn); the child
    // shares that connection and starts no server of its own.
    const servers = (journal: JournalLine[]) =>
      ofType(journal, "process.spawned").filter((r) => r.data.purpose === "mcp_server");
    expect(servers(parent)).toHaveLength(1);
    expect(servers(child)).toHaveLength(0);
    const started = ofType(parent, "agent.started")[0]!.data;
    const grant = started.grant as {
      tools: string[];
      mcp_tools?: Record<string, string>;
      not_granted: string[];
    };
    expect(grant.tools).toContain(ECHO);
    expect(grant.tools).not.toContain(TOGGLE);
    expect(grant.mcp_tools).toMatchObject({ [ECHO]: "read_only" });
    expect(grant.mcp_tools?.[TOGGLE]).toBeUndefined();
    expect(grant.not_granted.join("\n")).toMatch(
      /MCP tools that are not read-only \(.*toggle-simulated-logging.*\)/,
    );

    // The child's own journal: the server's tools it was offered, and its call with the answer.
    const childTools = (ofType(child, "session.started")[0]!.data.tools as { name: string }[]).map(
      (t) => t.name,
    );
    expect(childTools).toContain(ECHO);
    expect(childTools).not.toContain(TOGGLE);
    const results = resultsByCall(child);
    expect(results.get("c1")).toMatchObject({
      name: ECHO,
      status: "ok",
      content: "Echo: from the child",
      data: { server: "everything", tool: "echo" },
    });
    // Not offered: refused before anything is sent (never started).
    expect(results.get("c2")).toMatchObject({ status: "invalid", error_type: "UNKNOWN_TOOL" });
    expect(mcpCalls(child)).toEqual([ECHO]);
    // The parent's own journal holds none of the child's MCP calls.
    expect(mcpCalls(parent)).toEqual([]);
    const result = resultsByCall(parent).get("a1") as { content: string };
    expect(result.content).toContain("granted only when named in tools");

    // policy explain decides the MCP tools as the child would.
    const explain = async (tool: string) => {
      const explained = await run(
        [
          "policy",
          "explain",
          tool,
          "{}",
          "--workspace",
          workspace,
          "--session",
          id,
          "--agent",
          "reader",
          "--json",
        ],
        env,
      );
      expectExit(explained, 0);
      return JSON.parse(explained.stdout);
    };
    expect(await explain(ECHO)).toMatchObject({
      decision: "allow",
      effect: "read_only",
      decided_by: "agent",
    });
    expect(await explain(TOGGLE)).toMatchObject({ decision: "deny", decided_by: "grant" });
  });

  it("gets a writing MCP tool only when named and its parent may write without proposals; its call is decided by the intersected policy", async () => {
    const named = { label: "writer", tools: ["read_file", TOGGLE] };
    const toggle: Script = {
      replies: [{ text: "", calls: [{ id: "c1", name: TOGGLE, arguments: {} }] }, { text: "toggled" }],
    };
    // The parent may write, and allows the tool: the child is granted it and its call runs.
    const allowed = await delegate(named, toggle, ["--write", "allow", "--allow", TOGGLE]);
    const grant = ofType(allowed.parent, "agent.started")[0]!.data.grant as {
      tools: string[];
      mcp_tools: Record<string, string>;
    };
    expect(grant.tools).toEqual(["read_file", TOGGLE]);
    expect(grant.mcp_tools[TOGGLE]).not.toBe("read_only");
    expect(resultsByCall(allowed.child).get("c1")).toMatchObject({ name: TOGGLE, status: "ok" });

    // The same parent without the allow rule: the call asks, the ask goes up, and with no one to
    // answer it is denied; the server never sees it.
    const asked = await delegate(named, toggle, ["--write", "allow"]);
    expect(resultsByCall(asked.child).get("c1")).toMatchObject({
      status: "denied",
      error_type: "USER_DENIED",
    });
    expect(ofType(asked.parent, "agent.approval").map((r) => r.data)).toEqual([
      expect.objectContaining({ label: "writer", call_id: "c1", tool: TOGGLE, decision: "deny" }),
    ]);
    expect(mcpCalls(asked.child)).toEqual([]);

    // A propose parent: its children's effects must come back as proposals, so it is not granted.
    const propose = await delegate(named, toggle, ["--write", "propose", "--allow", TOGGLE]);
    const refused = ofType(propose.parent, "agent.started")[0]!.data.grant as {
      tools: string[];
      not_granted: string[];
    };
    expect(refused.tools).toEqual(["read_file"]);
    expect(refused.not_granted.join("\n")).toContain("acts outside the child's copy");
    expect(mcpCalls(propose.child)).toEqual([]);
  });
});
