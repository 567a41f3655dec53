import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import {
  type ClientConnection,
  client,
  ndJsonStream,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from "@agentclientprotocol/sdk";
import { afterAll, describe, expect, it } from "vitest";
import {
  BIN,
  childEnv,
  FIXTURES,
  finished,
  harness,
  jsonScript,
  REPO_ROOT,
  removeTempDirs,
  tempDir,
  workspaceWith,
} from "./helpers.js";

/**
 * `harness acp` driven by the official SDK's client side, as an editor drives it: the built CLI
 * spawned, the protocol on its stdin/stdout, everything judged by what the client received and
 * what the journal and the workspace hold.
 */

type Answer = (request: RequestPermissionRequest) => RequestPermissionResponse;

interface Editor {
  child: ChildProcess;
  connection: ClientConnection;
  updates: SessionNotification[];
  permissions: RequestPermissionRequest[];
  stderr: () => string;
  close(): Promise<void>;
}

function startEditor(
  args: readonly string[],
  answer: Answer = () => ({ outcome: { outcome: "cancelled" } }),
): Editor {
  const child = spawn(process.execPath, [BIN, "acp", ...args], {
    env: childEnv(),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk;
  });
  const updates: SessionNotification[] = [];
  const permissions: RequestPermissionRequest[] = [];
  const app = client({ name: "test-editor" })
    .onNotification("session/update", ({ params }) => {
      updates.push(params);
    })
    .onRequest("session/request_permission", ({ params }) => {
      permissions.push(params);
      return answer(params);
    });
  const connection = app.connect(
    ndJsonStream(
      Writable.toWeb(
        child.stdin as NodeJS.WritableStream as import("node:stream").Writable,
      ) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout as import("node:stream").Readable) as ReadableStream<Uint8Array>,
    ),
  );
  return {
    child,
    connection,
    updates,
    permissions,
    stderr: () => stderr,
    async close() {
      connection.close();
      child.stdin?.end();
      if (child.exitCode === null && child.signalCode === null)
        await new Promise<void>((resolve) => child.once("close", () => resolve()));
    },
  };
}

async function initialized(editor: Editor) {
  return editor.connection.agent.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
  });
}

function journal(
  workspace: string,
  sessionId: string,
): Array<{ type: string; data: Record<string, unknown> }> {
  return readFileSync(join(workspace, ".harness/sessions", sessionId, "events.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { type: string; data: Record<string, unknown> });
}

const types = (records: Array<{ type: string }>) => records.map((record) => record.type);

afterAll(removeTempDirs);

describe("harness acp", () => {
  it("runs the scripted read-edit task to verified, with the journal harness run writes, and shows the whole old and new text", async () => {
    const files = { "notes.txt": "a draft\n" };
    const ws = await workspaceWith(files);
    const editor = startEditor([
      "--script",
      join(FIXTURES, "read-edit.mjs"),
      "--write",
      "allow",
      "--accept",
      "grep -q final notes.txt",
    ]);
    try {
      const init = await initialized(editor);
      expect(init.protocolVersion).toBe(1);
      expect(init.agentCapabilities?.loadSession).toBe(true);
      const created = await editor.connection.agent.request("session/new", { cwd: ws, mcpServers: [] });
      expect(created.modes?.currentModeId).toBe("allow");
      const done = await editor.connection.agent.request("session/prompt", {
        sessionId: created.sessionId,
        prompt: [{ type: "text", text: "replace draft with final in notes.txt" }],
      });
      expect(done.stopReason).toBe("end_turn");
      expect(await readFile(join(ws, "notes.txt"), "utf8")).toBe("a final\n");
      const records = journal(ws, created.sessionId);
      expect(records.at(-1)).toMatchObject({ type: "run.finished", data: { status: "verified" } });
      // The same run through harness run, in a twin workspace: the same record types in order.
      const twin = await workspaceWith(files);
      const run = await harness([
        "run",
        "--script",
        join(FIXTURES, "read-edit.mjs"),
        "--write",
        "allow",
        "--accept",
        "grep -q final notes.txt",
        "--workspace",
        twin,
        "--json",
        "replace draft with final in notes.txt",
      ]);
      const runId = (JSON.parse(run.stdout) as { session: string }).session;
      const runTypes = types(journal(twin, runId));
      expect(types(records)).toEqual(runTypes);
      // The edit's diff content holds the file's whole old and new text.
      const edit = editor.updates.find(
        (n) => n.update.sessionUpdate === "tool_call" && n.update.toolCallId === "edit-1",
      )?.update as { content?: Array<{ type: string; oldText?: string; newText?: string }> };
      expect(edit.content?.[0]).toMatchObject({ type: "diff", oldText: "a draft\n", newText: "a final\n" });
      const kinds = editor.updates.map((n) => n.update.sessionUpdate);
      expect(kinds).toContain("agent_message_chunk");
      expect(kinds).toContain("tool_call_update");
      expect(kinds).toContain("available_commands_update");
      expect(editor.stderr()).not.toBe(undefined);
    } finally {
      await editor.close();
    }
  }, 120_000);

  it("asks with the diff, binds the answer to the call, and a rejection writes nothing", async () => {
    const ws = await workspaceWith({ "notes.txt": "a draft\n" });
    // The client answers with the option offered for another call: no approval.
    const foreign = startEditor(["--script", join(FIXTURES, "read-edit.mjs"), "--write", "ask"], () => ({
      outcome: { outcome: "selected", optionId: `allow_once:${"0".repeat(64)}` },
    }));
    try {
      await initialized(foreign);
      const { sessionId } = await foreign.connection.agent.request("session/new", {
        cwd: ws,
        mcpServers: [],
      });
      const done = await foreign.connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "replace draft" }],
      });
      expect(done.stopReason).toBe("end_turn");
      const asked = foreign.permissions[0];
      expect(asked?.toolCall.toolCallId).toBe("edit-1");
      expect(asked?.toolCall.content?.[0]).toMatchObject({
        type: "diff",
        oldText: "a draft\n",
        newText: "a final\n",
      });
      expect(asked?.options.map((option) => option.kind)).toEqual([
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
      ]);
      expect(await readFile(join(ws, "notes.txt"), "utf8")).toBe("a draft\n");
      const decided = journal(ws, sessionId).find((record) => record.type === "approval.decided");
      expect(decided?.data).toMatchObject({ decision: "deny", by: "acp" });
    } finally {
      await foreign.close();
    }
    // The option offered for exactly this call allows it.
    const ws2 = await workspaceWith({ "notes.txt": "a draft\n" });
    const bound = startEditor(["--script", join(FIXTURES, "read-edit.mjs"), "--write", "ask"], (request) => ({
      outcome: { outcome: "selected", optionId: request.options[0]?.optionId ?? "" },
    }));
    try {
      await initialized(bound);
      const { sessionId } = await bound.connection.agent.request("session/new", { cwd: ws2, mcpServers: [] });
      await bound.connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "go" }],
      });
      expect(await readFile(join(ws2, "notes.txt"), "utf8")).toBe("a final\n");
      const records = journal(ws2, sessionId);
      const requested = records.find((record) => record.type === "approval.requested");
      const decided = records.find((record) => record.type === "approval.decided");
      expect(decided?.data).toMatchObject({ decision: "allow", scope: "once", by: "acp" });
      expect(decided?.data.call_hash).toBe(requested?.data.call_hash);
      expect(bound.permissions[0]?.options[0]?.optionId).toBe(
        `allow_once:${String(requested?.data.call_hash)}`,
      );
    } finally {
      await bound.close();
    }
  }, 180_000);

  it("journals a mode switch, refuses one past the configuration, and read-only mode writes nothing", async () => {
    const ws = await workspaceWith({ "notes.txt": "a draft\n" });
    const editor = startEditor(["--script", join(FIXTURES, "read-edit.mjs"), "--write", "ask"]);
    try {
      await initialized(editor);
      const { sessionId, modes } = await editor.connection.agent.request("session/new", {
        cwd: ws,
        mcpServers: [],
      });
      expect(modes?.currentModeId).toBe("ask");
      expect(modes?.availableModes.map((mode) => mode.id)).toEqual(["read-only", "propose", "ask"]);
      await expect(
        editor.connection.agent.request("session/set_mode", { sessionId, modeId: "allow" }),
      ).rejects.toThrow(/loosen/);
      await editor.connection.agent.request("session/set_mode", { sessionId, modeId: "read-only" });
      const done = await editor.connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "replace draft" }],
      });
      expect(done.stopReason).toBe("end_turn");
      expect(editor.permissions).toEqual([]);
      expect(await readFile(join(ws, "notes.txt"), "utf8")).toBe("a draft\n");
      const started = journal(ws, sessionId)[0];
      expect(started?.data.options).toMatchObject({ mode: "read-only" });
      const edit = journal(ws, sessionId).find(
        (record) => record.type === "tool.result" && record.data.call_id === "edit-1",
      );
      expect(edit?.data.status).not.toBe("ok");
      await editor.connection.agent.request("session/set_mode", { sessionId, modeId: "ask" });
      const switched = journal(ws, sessionId).filter((record) => record.type === "mode.switched");
      expect(switched.map((record) => record.data)).toEqual([
        { from: "read-only", to: "ask", ceiling: "ask", by: "acp" },
      ]);
    } finally {
      await editor.close();
    }
  }, 120_000);

  it("cancels a turn during a shell call and leaves no process behind", async () => {
    const ws = await workspaceWith({});
    const token = String(400000 + Math.floor(Math.random() * 90000));
    const script = await jsonScript([
      { calls: [{ id: "s1", name: "shell", arguments: { command: `sleep ${token}` } }] },
      { text: "done" },
    ]);
    const editor = startEditor(["--script", script, "--shell", "allow"]);
    try {
      await initialized(editor);
      const { sessionId } = await editor.connection.agent.request("session/new", { cwd: ws, mcpServers: [] });
      const prompt = editor.connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "sleep" }],
      });
      await until(() => journal(ws, sessionId).some((record) => record.type === "process.spawned"));
      const spawned = journal(ws, sessionId).find((record) => record.type === "process.spawned");
      await editor.connection.agent.notify("session/cancel", { sessionId });
      expect((await prompt).stopReason).toBe("cancelled");
      expect(alive(Number(spawned?.data.pid))).toBe(false);
      expect(sleepers(token)).toEqual([]);
      expect(types(journal(ws, sessionId))).toContain("turn.interrupted");
    } finally {
      await editor.close();
    }
  }, 120_000);

  it("loads a session after the agent was killed mid-turn, replaying its history, and refuses a tampered journal", async () => {
    const ws = await workspaceWith({});
    const token = String(400000 + Math.floor(Math.random() * 90000));
    const script = await jsonScript([
      { text: "starting", calls: [{ id: "s1", name: "shell", arguments: { command: `sleep ${token}` } }] },
      { text: "done" },
      { text: "second turn answered" },
    ]);
    const first = startEditor(["--script", script, "--shell", "allow"]);
    let sessionId = "";
    try {
      await initialized(first);
      sessionId = (await first.connection.agent.request("session/new", { cwd: ws, mcpServers: [] }))
        .sessionId;
      void first.connection.agent
        .request("session/prompt", { sessionId, prompt: [{ type: "text", text: "the goal" }] })
        .catch(() => undefined);
      await until(
        () =>
          existsSync(join(ws, ".harness/sessions", sessionId, "events.jsonl")) &&
          journal(ws, sessionId).some((record) => record.type === "process.spawned"),
      );
      first.child.kill("SIGKILL");
    } finally {
      await first.close();
    }
    const second = startEditor(["--script", script, "--shell", "allow"]);
    try {
      await initialized(second);
      await second.connection.agent.request("session/load", { sessionId, cwd: ws, mcpServers: [] });
      const replayed = second.updates.filter((n) => n.sessionId === sessionId).map((n) => n.update);
      expect(replayed[0]).toMatchObject({
        sessionUpdate: "user_message_chunk",
        content: { text: "the goal" },
      });
      expect(replayed).toContainEqual(
        expect.objectContaining({
          sessionUpdate: "agent_message_chunk",
          content: { type: "text", text: "starting" },
        }),
      );
      expect(replayed).toContainEqual(
        expect.objectContaining({ sessionUpdate: "tool_call", toolCallId: "s1" }),
      );
      const sessions = await second.connection.agent.request("session/list", { cwd: ws });
      expect(sessions.sessions.map((s) => s.sessionId)).toContain(sessionId);
    } finally {
      await second.close();
    }
    // Tampered between sessions: one byte of a recorded text changed.
    const path = join(ws, ".harness/sessions", sessionId, "events.jsonl");
    writeFileSync(path, readFileSync(path, "utf8").replace("the goal", "the gaol"));
    const third = startEditor(["--script", script, "--shell", "allow"]);
    try {
      await initialized(third);
      await expect(
        third.connection.agent.request("session/load", { sessionId, cwd: ws, mcpServers: [] }),
      ).rejects.toThrow(/refused/);
      expect(third.updates).toEqual([]);
    } finally {
      await third.close();
    }
  }, 180_000);
});

describe("harness acp commands and session lifecycle", () => {
  it("offers /diff and /undo with the chat's meaning, closes and resumes, and the session is an ordinary one", async () => {
    const ws = await workspaceWith({ "notes.txt": "a draft\n" });
    const editor = startEditor(["--script", join(FIXTURES, "read-edit.mjs"), "--write", "allow"]);
    try {
      await initialized(editor);
      const { sessionId } = await editor.connection.agent.request("session/new", { cwd: ws, mcpServers: [] });
      await editor.connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "replace draft" }],
      });
      expect(await readFile(join(ws, "notes.txt"), "utf8")).toBe("a final\n");
      const said = () =>
        editor.updates
          .filter((n) => n.update.sessionUpdate === "agent_message_chunk")
          .map((n) => (n.update as { content: { text?: string } }).content.text ?? "")
          .join("");
      await editor.connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "/diff" }],
      });
      expect(said()).toContain("-a draft");
      expect(said()).toContain("+a final");
      await editor.connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "/undo" }],
      });
      expect(await readFile(join(ws, "notes.txt"), "utf8")).toBe("a draft\n");
      expect(types(journal(ws, sessionId))).toEqual(
        expect.arrayContaining(["undo.started", "undo.finished"]),
      );
      const commands = editor.updates.find((n) => n.update.sessionUpdate === "available_commands_update")
        ?.update as {
        availableCommands: Array<{ name: string }>;
      };
      expect(commands.availableCommands.map((command) => command.name)).toEqual([
        "undo",
        "diff",
        "compact",
        "fork",
        "model",
      ]);
      await editor.connection.agent.request("session/close", { sessionId });
      await expect(
        editor.connection.agent.request("session/prompt", {
          sessionId,
          prompt: [{ type: "text", text: "hi" }],
        }),
      ).rejects.toThrow();
      const resumed = await editor.connection.agent.request("session/resume", {
        sessionId,
        cwd: ws,
        mcpServers: [],
      });
      expect(resumed.modes?.currentModeId).toBe("allow");
      const inspect = await harness(["inspect", sessionId, "--workspace", ws]);
      expect(inspect.code, inspect.stderr).toBe(0);
      expect(inspect.stdout).toContain("undo");
    } finally {
      await editor.close();
    }
  }, 120_000);
});

describe("harness acp with the editor's MCP servers", () => {
  it("starts a stdio server the editor passes like a user-config server, sandboxed, and records it", async () => {
    const ws = await workspaceWith({
      "server.mjs": readFileSync(join(FIXTURES, "mcp-annotated-server.mjs"), "utf8"),
    });
    const mark = join(ws, "calls.log");
    const script = await jsonScript([
      { calls: [{ id: "m1", name: "mcp__kv__store", arguments: { key: "a" } }] },
      { text: "stored" },
    ]);
    const editor = startEditor(["--script", script, "--allow", "mcp__kv__*"]);
    try {
      await initialized(editor);
      const { sessionId } = await editor.connection.agent.request("session/new", {
        cwd: ws,
        mcpServers: [
          {
            name: "kv",
            command: process.execPath,
            args: [join(ws, "server.mjs")],
            env: [{ name: "ANNOTATED_MARK", value: mark }],
          },
        ],
      });
      const done = await editor.connection.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: "store a" }],
      });
      expect(done.stopReason).toBe("end_turn");
      expect(await readFile(mark, "utf8")).toBe("call store\n");
      const records = journal(ws, sessionId);
      expect(records[0]?.data.options).toMatchObject({
        editor_mcp_servers: [{ name: "kv", command: process.execPath, digest: expect.any(String) }],
      });
      // The editor's variables are not recorded with the server (a token may be one).
      expect(JSON.stringify(records[0])).not.toContain("ANNOTATED_MARK");
      const spawned = records.find(
        (record) => record.type === "process.spawned" && record.data.call_id === "mcp_server:kv",
      );
      expect(spawned?.data.sandboxed).toBe(true);
      await expect(
        editor.connection.agent.request("session/new", {
          cwd: ws,
          mcpServers: [{ type: "http", name: "web", url: "http://127.0.0.1:1/mcp", headers: [] }],
        }),
      ).rejects.toThrow(/stdio/);
    } finally {
      await editor.close();
    }
  }, 120_000);
});

describe("harness acp with an ACP client nobody here wrote (acpx, headless)", () => {
  it("runs the read-edit task through acpx exec with every permission approved", async () => {
    const ws = await workspaceWith({ "notes.txt": "a draft\n" });
    const home = await tempDir("harness-acpx-home-");
    const agentCommand = [
      JSON.stringify(process.execPath),
      JSON.stringify(BIN),
      "acp",
      "--script",
      JSON.stringify(join(FIXTURES, "read-edit.mjs")),
      "--write",
      "ask",
      "--accept",
      JSON.stringify("grep -q final notes.txt"),
    ].join(" ");
    const child = spawn(
      process.execPath,
      [
        join(REPO_ROOT, "node_modules/acpx/dist/cli.js"),
        "--agent",
        agentCommand,
        "--cwd",
        ws,
        "--approve-all",
        "--format",
        "json",
        "--timeout",
        "120",
        "exec",
        "replace draft with final in notes.txt",
      ],
      { env: { ...childEnv(), HOME: home }, stdio: ["ignore", "pipe", "pipe"] },
    );
    const result = await finished(child);
    expect(result.code, result.stderr).toBe(0);
    expect(await readFile(join(ws, "notes.txt"), "utf8")).toBe("a final\n");
    const events = result.stdout
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map(
        (line) =>
          JSON.parse(line) as { sessionId?: string; type?: string; toolCallId?: string; status?: string },
      );
    const sessionId = events
      .map((event) => event.sessionId)
      .find((id) => id !== undefined && id !== "unknown");
    expect(sessionId).toBeDefined();
    expect(events).toContainEqual(expect.objectContaining({ toolCallId: "edit-1", status: "completed" }));
    const records = journal(ws, String(sessionId));
    expect(records.at(-1)).toMatchObject({ type: "run.finished", data: { status: "verified" } });
    // acpx's --approve-all picked the option offered for exactly this call.
    expect(records.find((record) => record.type === "approval.decided")?.data).toMatchObject({
      decision: "allow",
      by: "acp",
    });
  }, 180_000);
});

async function until(check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const start = Date.now();
  for (;;) {
    try {
      if (check()) return;
    } catch {
      // not there yet
    }
    if (Date.now() - start > timeoutMs) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function alive(pid: number): boolean {
  return existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
}

/** Processes whose command line holds the test's token (none may outlive the cancel). */
function sleepers(token: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmd.includes(`sleep ${token}`)) found.push(`${entry}: ${cmd}`);
    } catch {
      // gone
    }
  }
  return found;
}
