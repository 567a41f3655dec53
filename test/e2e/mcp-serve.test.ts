import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt, readJournal, removeTempDirs, sessionIds, workspaceWith } from "./helpers.js";
import { connectServe, factsOf, textOf } from "./mcp-serve-client.js";

beforeAll(() => ensureBuilt());
afterAll(removeTempDirs);

const GOVERNED = [
  "batch",
  "edit_file",
  "glob",
  "grep",
  "process_input",
  "process_list",
  "process_output",
  "process_stop",
  "read_artifact",
  "read_file",
  "shell",
  "web_fetch",
  "write_file",
];

describe("harness mcp serve over stdio, driven by the official MCP client", () => {
  it("lists the governed tools with their JSON schemas, and harness_run", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const served = await connectServe(["--workspace", workspace]);
    try {
      const { tools } = await served.client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual([...GOVERNED, "harness_run"].sort());
      const write = tools.find((tool) => tool.name === "write_file");
      expect(write?.inputSchema.type).toBe("object");
      expect(Object.keys(write?.inputSchema.properties ?? {})).toEqual(
        expect.arrayContaining(["path", "content", "expected_version"]),
      );
      expect(write?.inputSchema.required).toEqual(expect.arrayContaining(["path", "content"]));
    } finally {
      await served.close();
    }
  });

  it("journals a write_file call in the server's own session: the reply, tool.started and tool.result", async () => {
    const workspace = await workspaceWith({});
    const served = await connectServe(["--workspace", workspace, "--write", "allow"]);
    try {
      const result = await served.client.callTool({
        name: "write_file",
        arguments: { path: "out.txt", content: "hello\n" },
      });
      expect(result.isError).toBeFalsy();
      expect(textOf(result)).toMatch(/version: [0-9a-f]{64}/);
      expect(await readFile(join(workspace, "out.txt"), "utf8")).toBe("hello\n");
      const facts = factsOf(result);
      const records = await readJournal(workspace, facts.session);
      const started = records.find((r) => r.type === "session.started");
      if (!started) throw new Error("no session.started record");
      expect(started.data.goal).toBe("mcp serve");
      expect(started.data.provider).toEqual({ kind: "mcp-client", name: "mcp serve" });
      expect((started.data.policy as { write?: unknown }).write).toMatchObject({
        mode: "allow",
        source: "cli",
      });
      const reply = records.find((r) => r.type === "model.reply");
      expect(reply?.data.calls).toEqual([
        { id: facts.call_id, name: "write_file", arguments: { path: "out.txt", content: "hello\n" } },
      ]);
      const toolStarted = records.filter((r) => r.type === "tool.started");
      const toolResult = records.filter((r) => r.type === "tool.result");
      expect(toolStarted.map((r) => [r.data.call_id, r.data.name])).toEqual([[facts.call_id, "write_file"]]);
      expect(toolResult.map((r) => [r.data.call_id, r.data.status])).toEqual([[facts.call_id, "ok"]]);
      expect(toolStarted[0]!.seq).toBeLessThan(toolResult[0]!.seq);
    } finally {
      await served.close();
    }
  });

  it("asks through elicitation when the policy says ask; a declined answer denies and writes nothing", async () => {
    const workspace = await workspaceWith({ "keep.txt": "original\n" });
    const served = await connectServe(["--workspace", workspace, "--write", "ask"], {
      elicit: () => ({ action: "decline" }),
    });
    try {
      const result = await served.client.callTool({
        name: "write_file",
        arguments: { path: "new.txt", content: "should not exist\n" },
      });
      expect(result.isError).toBe(true);
      expect(factsOf(result).error_type).toBe("USER_DENIED");
      expect(textOf(result)).toContain("Not approved");
      expect(served.elicitations).toHaveLength(1);
      expect(served.elicitations[0]!.message).toContain("write_file");
      expect(served.elicitations[0]!.message).toContain("new.txt");
      await expect(readFile(join(workspace, "new.txt"))).rejects.toThrow(/ENOENT/);
      const records = await readJournal(workspace, factsOf(result).session);
      const decided = records.filter((r) => r.type === "approval.decided");
      expect(decided.map((r) => [r.data.decision, r.data.by])).toEqual([["deny", "mcp-client"]]);
      expect(records.filter((r) => r.type === "tool.started")).toHaveLength(0);
    } finally {
      await served.close();
    }
  });

  it("runs the call once the client's user approves it (2026-07-28 protocol revision)", async () => {
    const workspace = await workspaceWith({});
    const served = await connectServe(["--workspace", workspace, "--write", "ask"], {
      modern: true,
      elicit: () => ({ action: "accept", content: { approve: true } }),
    });
    try {
      const result = await served.client.callTool({
        name: "write_file",
        arguments: { path: "approved.txt", content: "yes\n" },
      });
      expect(textOf(result)).toMatch(/version: [0-9a-f]{64}/);
      expect(result.isError).toBeFalsy();
      expect(served.elicitations).toHaveLength(1);
      expect(await readFile(join(workspace, "approved.txt"), "utf8")).toBe("yes\n");
      const records = await readJournal(workspace, factsOf(result).session);
      expect(records.filter((r) => r.type === "approval.decided").map((r) => r.data.decision)).toEqual([
        "allow",
      ]);
    } finally {
      await served.close();
    }
  });

  it("denies a question still unanswered when the client disconnects, and ends the session promptly", async () => {
    const workspace = await workspaceWith({});
    let asked!: () => void;
    const wasAsked = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const served = await connectServe(["--workspace", workspace, "--write", "ask"], {
      elicit: () => {
        asked();
        return new Promise<Record<string, unknown>>(() => undefined);
      },
    });
    const call = served.client
      .callTool({ name: "write_file", arguments: { path: "late.txt", content: "late\n" } })
      .catch(() => undefined);
    await wasAsked;
    const [session] = sessionIds(workspace);
    await served.close();
    await call;
    let types: string[] = [];
    for (let i = 0; i < 100 && !types.includes("run.finished"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      types = (await readJournal(workspace, session!)).map((r) => r.type);
    }
    expect(types.at(-1)).toBe("run.finished");
    const records = await readJournal(workspace, session!);
    const decided = records.filter((r) => r.type === "approval.decided").map((r) => r.data);
    expect(decided).toEqual([
      expect.objectContaining({ decision: "deny", reason: "the MCP client closed the connection" }),
    ]);
    await expect(readFile(join(workspace, "late.txt"))).rejects.toThrow(/ENOENT/);
  });

  it("denies an ask when the client declared no elicitation capability", async () => {
    const workspace = await workspaceWith({ "keep.txt": "original\n" });
    const served = await connectServe(["--workspace", workspace, "--write", "ask"]);
    try {
      const read = await served.client.callTool({ name: "read_file", arguments: { path: "keep.txt" } });
      expect(read.isError).toBeFalsy();
      const edit = await served.client.callTool({
        name: "edit_file",
        arguments: { path: "keep.txt", old_text: "original", new_text: "changed" },
      });
      expect(edit.isError).toBe(true);
      expect(factsOf(edit).error_type).toBe("USER_DENIED");
      const write = await served.client.callTool({
        name: "write_file",
        arguments: { path: "new.txt", content: "no\n" },
      });
      expect(write.isError).toBe(true);
      expect(factsOf(write).error_type).toBe("USER_DENIED");
      expect(textOf(write)).toContain("elicitation");
      await expect(readFile(join(workspace, "new.txt"))).rejects.toThrow(/ENOENT/);
      expect(await readFile(join(workspace, "keep.txt"), "utf8")).toBe("original\n");
    } finally {
      await served.close();
    }
  });

  it("binds edits to the version read: a stale expected_version is a STALE_VERSION error and the file is unchanged", async () => {
    const workspace = await workspaceWith({ "notes.txt": "status: draft\n" });
    const served = await connectServe(["--workspace", workspace, "--write", "allow"]);
    try {
      const read = await served.client.callTool({ name: "read_file", arguments: { path: "notes.txt" } });
      const first = /^version: ([0-9a-f]{64})$/m.exec(textOf(read))?.[1];
      expect(first).toBeDefined();
      const edit = await served.client.callTool({
        name: "edit_file",
        arguments: { path: "notes.txt", old_text: "draft", new_text: "review", expected_version: first },
      });
      expect(edit.isError).toBeFalsy();
      expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: review\n");
      const stale = await served.client.callTool({
        name: "edit_file",
        arguments: { path: "notes.txt", old_text: "review", new_text: "final", expected_version: first },
      });
      expect(stale.isError).toBe(true);
      expect(factsOf(stale).error_type).toBe("STALE_VERSION");
      expect(textOf(stale)).toContain("STALE_VERSION");
      expect(await readFile(join(workspace, "notes.txt"), "utf8")).toBe("status: review\n");
    } finally {
      await served.close();
    }
  });

  it("runs a shell call in the sandbox and journals its process", async () => {
    const workspace = await workspaceWith({});
    const served = await connectServe(["--workspace", workspace, "--shell", "allow"]);
    try {
      const result = await served.client.callTool({
        name: "shell",
        arguments: { command: "echo hi > f.txt" },
      });
      expect(result.isError).toBeFalsy();
      const facts = factsOf(result) as { session: string; data?: { sandbox?: string; exit_code?: number } };
      expect(facts.data).toMatchObject({ sandbox: "workspace-write", exit_code: 0 });
      expect(await readFile(join(workspace, "f.txt"), "utf8")).toBe("hi\n");
      const records = await readJournal(workspace, facts.session);
      expect(records.filter((r) => r.type === "process.spawned").map((r) => r.data.call_id)).toEqual([
        factsOf(result).call_id,
      ]);
    } finally {
      await served.close();
    }
  });

  it("serves the journal of its own session as a resource", async () => {
    const workspace = await workspaceWith({ "a.txt": "a\n" });
    const served = await connectServe(["--workspace", workspace, "--write", "allow"]);
    try {
      const call = await served.client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
      const session = factsOf(call).session;
      const { resources } = await served.client.listResources();
      const uri = `harness://sessions/${session}/events.jsonl`;
      expect(resources.map((r) => r.uri)).toContain(uri);
      const read = await served.client.readResource({ uri });
      const content = read.contents[0] as { text: string; mimeType?: string };
      expect(content.mimeType).toBe("application/jsonl");
      const onDisk = await readFile(join(workspace, ".harness", "sessions", session, "events.jsonl"), "utf8");
      expect(onDisk.startsWith(content.text)).toBe(true);
      const lines = content.text
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { type: string });
      expect(lines[0]!.type).toBe("session.started");
      expect(lines.map((l) => l.type)).toContain("tool.result");
      await expect(
        served.client.readResource({ uri: "harness://sessions/../../etc/passwd" }),
      ).rejects.toThrow();
    } finally {
      await served.close();
    }
  });

  it("pairs concurrent calls with their own results, and ends the session when the client disconnects", async () => {
    const workspace = await workspaceWith({ "a.txt": "alpha\n", "b.txt": "beta\n", "c.txt": "gamma\n" });
    const served = await connectServe(["--workspace", workspace]);
    const names = ["a.txt", "b.txt", "c.txt"];
    const results = await Promise.all(
      names.map((path) => served.client.callTool({ name: "read_file", arguments: { path } })),
    );
    expect(
      results.map((r) =>
        textOf(r)
          .split("\n")
          .find((line) => line.startsWith("path: ")),
      ),
    ).toEqual(names.map((path) => `path: ${path}`));
    expect(textOf(results[1])).toContain("beta");
    const session = factsOf(results[0]).session;
    await served.close();
    // The disconnect is the client's last word: a reply without calls, and the run is finished.
    let types: string[] = [];
    for (let i = 0; i < 100 && !types.includes("run.finished"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      types = (await readJournal(workspace, session)).map((r) => r.type);
    }
    expect(types.at(-1)).toBe("run.finished");
    expect(types.filter((t) => t === "tool.result")).toHaveLength(3);
    const records = await readJournal(workspace, session);
    expect(records.at(-1)?.data.status).toBe("unverified");
    const replies = records.filter((r) => r.type === "model.reply");
    expect(replies.at(-1)?.data.text).toBe("the MCP client closed the connection");
  });
});
