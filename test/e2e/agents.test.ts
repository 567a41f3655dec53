import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliResult,
  childEnv,
  ensureBuilt,
  expectExit,
  finished,
  harness,
  type JournalLine,
  ofType,
  readJournal,
  removeTempDirs,
  resultsByCall,
  startHarness,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/*
 * Delegation through the built CLI: a scripted parent calls `agent`, its children's replies are
 * scripted by label, and what each child could do is read from the journals and the files on disk.
 */

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

interface Script {
  replies: unknown[];
  agents?: Record<string, Script>;
}

async function scriptFile(script: Script): Promise<string> {
  const file = join(await tempDir("harness-agents-script-"), "script.json");
  await writeFile(file, JSON.stringify(script));
  return file;
}

const call = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });
const agentCall = (id: string, args: Record<string, unknown>) => ({
  text: "",
  calls: [call(id, "agent", args)],
});

async function env(): Promise<NodeJS.ProcessEnv> {
  return { ...childEnv(), HARNESS_AGENTS_DIR: await tempDir("harness-agent-copies-") };
}

async function run(
  workspace: string,
  script: Script,
  flags: string[],
  environment?: NodeJS.ProcessEnv,
): Promise<{ result: CliResult; id: string; journal: JournalLine[] }> {
  const file = await scriptFile(script);
  const id = `s${Math.random().toString(16).slice(2, 10)}`;
  const result = await finished(
    startHarness(
      ["run", "--script", file, "--workspace", workspace, "--session", id, "--json", ...flags, "delegate"],
      { env: environment ?? (await env()) },
    ),
  );
  return { result, id, journal: await readJournal(workspace, id) };
}

const agentData = (journal: JournalLine[], type: string) => ofType(journal, type).map((r) => r.data);

describe("the agent tool", () => {
  it("runs a child in a private copy: an in-place append there leaves the parent's file alone, and its changes come back as proposals", async () => {
    const workspace = await workspaceWith({ "notes.txt": "one\n" });
    const { result, id, journal } = await run(
      workspace,
      {
        replies: [agentCall("a1", { task: "append a line", label: "worker" }), { text: "ok" }],
        agents: {
          worker: {
            replies: [
              { text: "", calls: [call("c1", "shell", { command: "echo two >> notes.txt" })] },
              { text: "appended" },
            ],
          },
        },
      },
      ["--write", "allow", "--shell", "allow"],
    );
    expectExit(result, 0);
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("one\n");
    const [started] = agentData(journal, "agent.started");
    expect(started).toMatchObject({
      call_id: "a1",
      label: "worker",
      child_session: `${id}/worker`,
      depth: 1,
    });
    const [done] = agentData(journal, "agent.finished");
    expect(done).toMatchObject({ call_id: "a1", outcome: "unverified", survivors: 0, conflicts: [] });
    expect(done?.changes).toEqual([
      expect.objectContaining({ path: "notes.txt", added: 1, removed: 0, applied: false }),
    ]);
    expect(agentData(journal, "agent.merge")).toEqual([]);
    // The child's own journal, under the parent's session folder, ends with the hash the parent recorded.
    const child = await readJournal(workspace, `${id}/worker`);
    expect(child.at(-1)?.hash).toBe(done?.head_hash);
    expect(ofType(child, "tool.result")[0]?.data.status).toBe("ok");
    const content = String(resultsByCall(journal).get("a1")?.content);
    expect(content).toContain("unverified");
    expect(content).toContain("appended");
    // Its change is this session's proposal, bound to the base version: apply writes it.
    const [proposal] = agentData(journal, "proposal.recorded");
    expect(proposal).toMatchObject({ call_id: "a1", path: "notes.txt", content: "one\ntwo\n" });
    expect(proposal?.base_version).toBe(
      done?.changes && (done.changes as { base_version: string }[])[0]?.base_version,
    );
    const applied = await harness(["apply", id, "--workspace", workspace, "--json"]);
    expectExit(applied, 0);
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("one\ntwo\n");
  });

  it("merge apply writes the child's changes here, journaled under the agent call and undoable", async () => {
    const workspace = await workspaceWith({ "notes.txt": "one\n" });
    const { result, id, journal } = await run(
      workspace,
      {
        replies: [agentCall("a1", { task: "write", label: "w", merge: "apply" }), { text: "ok" }],
        agents: {
          w: {
            replies: [
              {
                text: "",
                calls: [
                  call("c1", "shell", { command: "echo two >> notes.txt" }),
                  call("c2", "write_file", { path: "new.txt", content: "fresh\n" }),
                ],
              },
              { text: "done" },
            ],
          },
        },
      },
      ["--write", "allow", "--shell", "allow"],
    );
    expectExit(result, 0);
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("one\ntwo\n");
    expect(await readFile(join(workspace, "new.txt"), "utf8")).toBe("fresh\n");
    const types = journal.map((r) => r.type);
    const merge = types.indexOf("agent.merge");
    const changed = journal.findIndex((r) => r.type === "workspace.changed" && r.data.call_id === "a1");
    expect(merge).toBeGreaterThan(types.indexOf("agent.started"));
    expect(changed).toBeGreaterThan(merge);
    expect(types.indexOf("agent.finished")).toBeGreaterThan(merge);
    // The merge is the parent's change, attributed to the agent call: undo names it and puts it back.
    const undo = await harness(["undo", id, "--to", "a1", "--workspace", workspace, "--json"]);
    expectExit(undo, 0);
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("one\n");
    await expect(readFile(join(workspace, "new.txt"))).rejects.toThrow();
  });

  it("a merge never changes a file the parent's edit_file rule denies, whatever the child's shell did", async () => {
    const workspace = await workspaceWith({ "notes.txt": "one\n" });
    const { result, journal } = await run(
      workspace,
      {
        replies: [agentCall("a1", { task: "append", label: "w", merge: "apply" }), { text: "ok" }],
        agents: {
          w: {
            replies: [
              { text: "", calls: [call("c1", "shell", { command: "echo two >> notes.txt" })] },
              { text: "done" },
            ],
          },
        },
      },
      ["--write", "allow", "--shell", "allow", "--deny", "edit_file(notes.txt)"],
    );
    expectExit(result, 0);
    expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("one\n");
    expect(agentData(journal, "agent.finished")[0]?.conflicts).toEqual([
      expect.objectContaining({ path: "notes.txt", reason: expect.stringContaining("edit_file(notes.txt)") }),
    ]);
    expect(journal.filter((r) => r.type === "workspace.changed" && r.data.call_id === "a1")).toEqual([]);
  });

  it("a child asking for shell allow under the parent's deny shell(curl*) is still denied curl", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const { result, id, journal } = await run(
      workspace,
      {
        replies: [agentCall("a1", { task: "fetch", label: "net", shell: "allow" }), { text: "ok" }],
        agents: {
          net: {
            replies: [
              { text: "", calls: [call("c1", "shell", { command: "curl http://127.0.0.1:9/ > got.txt" })] },
              { text: "done" },
            ],
          },
        },
      },
      ["--write", "allow", "--shell", "ask", "--deny", "shell(curl*)"],
    );
    expectExit(result, 0);
    const child = await readJournal(workspace, `${id}/net`);
    const denied = resultsByCall(child).get("c1");
    expect(denied?.error_type).toBe("POLICY_DENIED");
    expect(ofType(child, "tool.started").filter((r) => r.data.call_id === "c1")).toEqual([]);
    const [started] = agentData(journal, "agent.started");
    expect(started?.grant).toMatchObject({ shell: "ask" });
    expect(String(resultsByCall(journal).get("a1")?.content)).toContain('not granted: shell "allow"');
  });

  it("a child of a --read-only parent cannot write, whatever it asks", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const { result, id, journal } = await run(
      workspace,
      {
        replies: [
          agentCall("a1", { task: "write", label: "ro", write: "allow", merge: "apply" }),
          { text: "ok" },
        ],
        agents: {
          ro: {
            replies: [
              { text: "", calls: [call("c1", "write_file", { path: "b.txt", content: "b" })] },
              { text: "done" },
            ],
          },
        },
      },
      ["--read-only"],
    );
    expectExit(result, 0);
    const child = await readJournal(workspace, `${id}/ro`);
    expect(resultsByCall(child).get("c1")?.status).not.toBe("ok");
    expect(agentData(journal, "agent.started")[0]?.grant).toMatchObject({ read_only: true });
    expect(agentData(journal, "agent.finished")[0]?.changes).toEqual([]);
    await expect(readFile(join(workspace, "b.txt"))).rejects.toThrow();
  });

  it("a child cannot delegate past --agents-depth: AGENT_LIMIT naming the depth", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const { result, id } = await run(
      workspace,
      {
        replies: [agentCall("a1", { task: "delegate again", label: "c" }), { text: "ok" }],
        agents: {
          c: {
            replies: [agentCall("g1", { task: "deeper", label: "g" }), { text: "could not" }],
            agents: {},
          },
        },
      },
      ["--write", "allow"],
    );
    expectExit(result, 0);
    const child = await readJournal(workspace, `${id}/c`);
    const refused = resultsByCall(child).get("g1");
    expect(refused?.error_type).toBe("AGENT_LIMIT");
    expect(String(refused?.content ?? refused?.summary)).toContain("--agents-depth is 1");
    expect(ofType(child, "agent.started")).toEqual([]);
  });

  it("fan-out past --agents-max in one reply: the later calls are refused in call order", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const calls = ["x", "y", "z"].map((label, i) => call(`a${i}`, "agent", { task: "read", label }));
    const child = { replies: [{ text: "done" }] };
    const { result, journal } = await run(
      workspace,
      { replies: [{ text: "", calls }, { text: "ok" }], agents: { x: child, y: child, z: child } },
      ["--write", "allow", "--agents-max", "2", "--agents-concurrent", "1"],
    );
    expectExit(result, 0);
    const results = resultsByCall(journal);
    expect(results.get("a0")?.status).toBe("ok");
    expect(results.get("a1")?.status).toBe("ok");
    expect(results.get("a2")?.error_type).toBe("AGENT_LIMIT");
    expect(agentData(journal, "agent.started").map((d) => d.label)).toEqual(["x", "y"]);
  });

  it("a child budget larger than what the parent has left is refused up front with the numbers", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const { result, journal } = await run(
      workspace,
      {
        replies: [
          agentCall("a1", { task: "t", label: "big", budget: { model_requests: 10 } }),
          { text: "ok" },
        ],
        agents: { big: { replies: [{ text: "done" }] } },
      },
      ["--write", "allow", "--max-model-requests", "4"],
    );
    expectExit(result, 0);
    const refused = resultsByCall(journal).get("a1");
    expect(refused?.error_type).toBe("BUDGET_EXCEEDED");
    expect(String(refused?.content ?? refused?.summary)).toContain("model_requests: asked 10, 3 left");
    expect(ofType(journal, "agent.started")).toEqual([]);
  });

  it("two children editing one file: one merges, the other conflicts and is left alone", async () => {
    const workspace = await workspaceWith({ "shared.txt": "base\n" });
    const edit = (text: string) => ({
      replies: [
        { text: "", calls: [call("r", "read_file", { path: "shared.txt" })] },
        { text: "", calls: [call("e", "write_file", { path: "shared.txt", content: text })] },
        { text: "done" },
      ],
    });
    const calls = [
      call("a1", "agent", { task: "one", label: "one", merge: "apply" }),
      call("a2", "agent", { task: "two", label: "two", merge: "apply" }),
    ];
    const { result, journal } = await run(
      workspace,
      { replies: [{ text: "", calls }, { text: "ok" }], agents: { one: edit("one\n"), two: edit("two\n") } },
      ["--write", "allow"],
    );
    expectExit(result, 0);
    // Both copies were made from "base": whichever merged first wins, the other is a conflict.
    const finishedData = agentData(journal, "agent.finished");
    const merged = finishedData.filter((d) => (d.conflicts as unknown[]).length === 0);
    const conflicted = finishedData.filter((d) => (d.conflicts as unknown[]).length === 1);
    expect(merged).toHaveLength(1);
    expect(conflicted).toHaveLength(1);
    expect(conflicted[0]?.conflicts).toEqual([expect.objectContaining({ path: "shared.txt" })]);
    const winner = String(merged[0]?.child_session).endsWith("/one") ? "one\n" : "two\n";
    expect(await readFile(join(workspace, "shared.txt"), "utf8")).toBe(winner);
  });
});
